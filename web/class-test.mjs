// Browser test of a live class (scripts/web-class-test.sh): starts `tplab class` on 127.0.0.1
// serving dist/, opens the teacher's console (1920x1080) and three students (phones, 390x844)
// in headless chromium, and runs a full round (vote, reveal, discuss and vote again, reveal,
// the answer) and a design-lab challenge by clicking where the app says it drew each control
// (window.tplab.target); what each page knows is read from window.tplab.class(). Then the
// class's CSV export (with the teacher's secret) must hold every vote.
// Screenshots go to $WEB_TEST_OUT (default: web/out/).
import { spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { launch, waitForApp } from "./common.mjs";

const here = new URL(".", import.meta.url).pathname;
const root = resolve(here, "..");
const out = resolve(process.env.WEB_TEST_OUT ?? join(here, "out"));
const tplabBin = process.env.TPLAB_BIN ?? join(root, "target", "debug", "tplab");

function check(ok, what) {
  if (!ok) throw new Error(`FAILED: ${what}`);
  console.log(`ok: ${what}`);
}

/** Starts `tplab class` (on `port` with `data`: a restart resumes that class); resolves to
 * { join, teacher, base, secret, port, data, stop } once it printed them. `stop` resolves when
 * the server has exited. */
async function startClass(port, data, console_ = false) {
  data = data ?? (await mkdtemp(join(tmpdir(), "tplab-class-")));
  port = port ?? 20000 + Math.floor(Math.random() * 20000);
  const args = ["class", "--port", String(port), "--dist", join(root, "dist"), "--data", data, "--max-per-address", "64"];
  // The teacher's desktop app as the console, in this process (the display and the AT-SPI
  // bus come from scripts/atspi-test.sh).
  if (console_) args.unshift("--lang", "en") && args.push("--console");
  const child = spawn(tplabBin, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, TPLAB_DATA_DIR: join(data, "app") },
  });
  let text = "";
  let ready = false;
  child.stderr.on("data", (d) => process.stderr.write(`[class] ${d}`));
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`tplab class printed no links: ${text}`)), 60000);
    child.on("exit", (code) => fail(new Error(`tplab class exited (${code}): ${text}`)));
    child.stdout.on("data", (d) => {
      text += d;
      if (ready) return;
      const join = text.match(/Join: (\S+)/);
      const teacher = text.match(/Teacher's console \(keep it private\): (\S+)/);
      if (join && teacher) {
        ready = true;
        clearTimeout(timer);
        const secret = teacher[1].split("#teacher=")[1];
        child.removeAllListeners("exit");
        const exited = new Promise((done) => child.on("exit", done));
        const stop = async () => {
          child.kill("SIGINT");
          await exited;
        };
        ok({ join: join[1], teacher: teacher[1], base: `http://127.0.0.1:${port}`, secret, port, data, stop, pid: child.pid });
      }
    });
  });
}

/** What the page knows of the class. */
async function cls(page) {
  return JSON.parse((await page.evaluate(() => window.tplab.class())) || "{}");
}

async function until(page, done, what, timeoutMs = 20000) {
  const start = Date.now();
  for (;;) {
    const c = await cls(page);
    if (done(c)) return c;
    if (Date.now() - start > timeoutMs) throw new Error(`FAILED: ${what}: ${JSON.stringify(c)}`);
    await page.waitForTimeout(100);
  }
}

// A tap as a person makes it (egui reads the pointer once a frame), repeated until `done` holds:
// a click can go unseen under load, and the control is looked up again before each try.
async function tap(page, name, done, what) {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const handle = await page.waitForFunction(
      (n) => {
        const at = window.tplab.target(n);
        return at.length === 2 ? { x: at[0], y: at[1] } : null;
      },
      name,
      { timeout: 10000 },
    );
    const at = await handle.jsonValue();
    await page.mouse.move(at.x, at.y);
    await page.waitForTimeout(150);
    await page.mouse.down();
    await page.waitForTimeout(80);
    await page.mouse.up();
    await page.mouse.move(1, 1);
    try {
      await until(page, done, what, 4000);
      return;
    } catch (e) {
      if (attempt === 3) throw e;
      console.log(`note: ${what} did not happen after tap ${attempt} on ${name}; tapping again`);
    }
  }
}

/** The desktop console, used as a screen reader uses it (scripts/atspi_press.py over AT-SPI). */
function atspi(pid, what, arg) {
  const py = process.env.ATSPI_PYTHON ?? "/usr/bin/python3";
  const r = spawnSync(py, [join(root, "scripts", "atspi_press.py"), "--pid", String(pid), what, arg], {
    encoding: "utf8",
    timeout: 90000,
  });
  if (r.status !== 0) throw new Error(`FAILED: the console: ${what} ${arg}: ${r.stderr || r.error}`);
  return r.stdout.trim();
}
const press = (pid, name) => atspi(pid, "--press", name);
const read = (pid, text) => atspi(pid, "--read", text);

const problems = [];
// While the server is down on purpose, the browser logs its failed reconnections: expected.
let restarting = false;

/** CLASS_TEACHER=desktop: the teacher is the desktop app (`tplab class --console`) under the
 * display and AT-SPI bus scripts/atspi-test.sh made; three phones in the browser run a round and
 * a challenge with it, and the export has every vote. */
async function desktopMain() {
  await mkdir(out, { recursive: true });
  const cls_ = await startClass(undefined, undefined, true);
  const profile = await mkdtemp(join(tmpdir(), "tplab-chromium-"));
  const context = await launch(profile);
  try {
    read(cls_.pid, "Live class");
    check(true, "the desktop console is up and read over AT-SPI");
    const students = [];
    for (let i = 0; i < 3; i++) {
      const page = await context.newPage();
      await page.setViewportSize({ width: 390, height: 844 });
      page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`));
      await page.goto(cls_.join);
      await waitForApp(page, 120000);
      students.push(page);
    }
    for (const s of students) await tap(s, "class-join", (c) => c.status === "Joined", "a student joins");
    read(cls_.pid, "3 joined");
    check(true, "the console counts three students");
    press(cls_.pid, "Ask the room");
    for (const s of students) await until(s, (c) => c.phase === "voting", "the question reaches a phone");
    const vote = async (s, letter, round) =>
      tap(s, `class-choice-${letter}`, (c) => c.my_votes && c.my_votes[round] !== "None", `a vote for ${letter}`);
    await vote(students[0], "A", 0);
    await vote(students[1], "B", 0);
    await vote(students[2], "B", 0);
    read(cls_.pid, "3 answered (vote 1)");
    press(cls_.pid, "Reveal the votes");
    for (const s of students) await until(s, (c) => c.phase === "revealed", "the first distribution closes the vote");
    press(cls_.pid, "Discuss and vote again");
    for (const s of students) await until(s, (c) => c.phase === "revoting", "the second vote reaches a phone");
    await vote(students[0], "B", 1);
    await vote(students[1], "B", 1);
    await vote(students[2], "C", 1);
    read(cls_.pid, "3 answered (vote 2)");
    press(cls_.pid, "Reveal the votes");
    press(cls_.pid, "Reveal the answer");
    for (const s of students) await until(s, (c) => c.answered_out, "the answer reaches a phone");
    check(true, "a full round from the desktop console: vote, reveal, revote, reveal, answer");
    press(cls_.pid, "Set this challenge");
    for (const s of students) await until(s, (c) => c.challenge != null, "the challenge reaches a phone");
    await tap(students[0], "class-split-fc1-columns", () => true, "fc1 by columns");
    await tap(students[0], "class-split-fc2-rows", () => true, "fc2 by rows");
    for (const s of students) await tap(s, "class-submit-plan", (c) => c.verdict != null, "a plan graded");
    read(cls_.pid, "Plans submitted: 3");
    check(true, "a design-lab challenge: the desktop console groups three plans");
    const res = await fetch(`${cls_.base}/api/export.csv`, { headers: { authorization: `Bearer ${cls_.secret}` } });
    const rows = (await res.text()).trim().split("\n").slice(1);
    const votes = rows.map((r) => {
      const f = r.split(",");
      return f[f.length - 7] + f[f.length - 4];
    });
    votes.sort();
    check(JSON.stringify(votes) === JSON.stringify(["AB", "BB", "BC"]), `every vote in the CSV (${votes})`);
    check(problems.length === 0, `no uncaught exception${problems.length ? ": " + problems.join("; ") : ""}`);
  } finally {
    await context.close();
    await cls_.stop();
  }
}

async function main() {
  if (process.env.CLASS_TEACHER === "desktop") return desktopMain();
  await mkdir(out, { recursive: true });
  let cls_ = await startClass();
  const profile = await mkdtemp(join(tmpdir(), "tplab-chromium-"));
  const context = await launch(profile);
  try {
    const open = async (url, width, height) => {
      const page = await context.newPage();
      await page.setViewportSize({ width, height });
      page.on("console", (m) => {
        if (m.type() !== "error") return;
        if (restarting && /WebSocket/i.test(m.text())) return;
        problems.push(`console error: ${m.text()}`);
      });
      page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`));
      await page.goto(url);
      await waitForApp(page, 120000);
      return page;
    };
    const teacher = await open(cls_.teacher, 1920, 1080);
    await until(teacher, (c) => c.status === "Joined", "the console joins with the secret");
    check((await teacher.evaluate(() => window.tplab.view())) === "class", "the teacher's link opens the Class view");
    const students = [];
    for (let i = 0; i < 3; i++) students.push(await open(cls_.join, 390, 844));
    for (const s of students) {
      await tap(s, "class-join", (c) => c.status === "Joined", "a student joins");
    }
    await until(teacher, (c) => c.joined === 3, "the console counts three students");
    check(true, "three phones joined");

    await tap(teacher, "class-pose", (c) => c.question != null, "the teacher asks the room");
    for (const s of students) await until(s, (c) => c.phase === "voting", "the question reaches a phone");
    const vote = async (s, letter, round) =>
      tap(s, `class-choice-${letter}`, (c) => c.my_votes && c.my_votes[round] !== "None", `a vote for ${letter}`);
    await vote(students[0], "A", 0);
    await vote(students[1], "B", 0);
    await vote(students[2], "B", 0);
    await until(teacher, (c) => c.answered && c.answered[0] === 3, "the console counts three votes");
    await students[0].screenshot({ path: join(out, "class-student-voted.png") });
    await tap(teacher, "class-reveal", (c) => c.phase === "revealed", "the first distribution");
    await tap(teacher, "class-revote", (c) => c.phase === "revoting", "discuss and vote again");
    for (const s of students) await until(s, (c) => c.phase === "revoting", "the second vote reaches a phone");
    await vote(students[0], "B", 1);
    await vote(students[1], "B", 1);
    await vote(students[2], "C", 1);
    await until(teacher, (c) => c.answered && c.answered[1] === 3, "the console counts three second votes");
    await tap(teacher, "class-reveal", (c) => c.phase === "revealed_again", "the second distribution");
    const both = await cls(teacher);
    check(both.dists.every((d) => d !== "None"), "both distributions on the console");
    await tap(teacher, "class-reveal-answer", (c) => c.answered_out, "the answer");
    for (const s of students) await until(s, (c) => c.answered_out, "the answer reaches a phone");
    await teacher.screenshot({ path: join(out, "class-console-answer.png") });
    await students[1].screenshot({ path: join(out, "class-student-answer.png") });
    check(true, "a full round: vote, reveal, revote, reveal, answer");

    await tap(teacher, "class-set-challenge", (c) => c.challenge != null, "the teacher sets a challenge");
    for (const s of students) await until(s, (c) => c.challenge != null, "the challenge reaches a phone");
    await tap(students[0], "class-split-fc1-columns", () => true, "fc1 by columns");
    await tap(students[0], "class-split-fc2-rows", () => true, "fc2 by rows");
    for (const s of students) await tap(s, "class-submit-plan", (c) => c.verdict != null, "a plan graded");
    await until(teacher, (c) => c.plans === 3, "the console groups three plans");
    const ada = await cls(students[0]);
    check(ada.verdict === "valid" || ada.verdict === "megatron", `fc1 by columns and fc2 by rows is accepted (${ada.verdict})`);
    await students[0].screenshot({ path: join(out, "class-student-plan.png") });
    await teacher.screenshot({ path: join(out, "class-console-plans.png") });
    check(true, "a design-lab challenge: three plans graded and grouped");

    const res = await fetch(`${cls_.base}/api/export.csv`, { headers: { authorization: `Bearer ${cls_.secret}` } });
    const csv = await res.text();
    check(res.status === 200, "the export answers with the secret");
    const rows = csv.trim().split("\n").slice(1);
    check(rows.length === 3, `one row per student (${rows.length})`);
    // first_vote and second_vote counted from the end (the prompt may hold commas): …,
    // first_vote, first_right, first_at, second_vote, second_right, second_at, seconds_to_first_vote
    const votes = rows.map((r) => {
      const f = r.split(",");
      return f[f.length - 7] + f[f.length - 4];
    });
    const when = rows[0].split(",");
    check(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(when[when.length - 5]), `the first vote's time as a date (${when[when.length - 5]})`);
    votes.sort();
    check(JSON.stringify(votes) === JSON.stringify(["AB", "BB", "BC"]), `every vote in the CSV (${votes})`);

    // The server restarts mid-round: the phones and the console come back by themselves, each
    // student the same student with their vote kept, and the round goes on.
    console.log("note: asking again");
    await tap(teacher, "class-pose", (c) => c.question != null && c.phase === "voting" && c.question !== both.question, "the teacher asks again");
    for (const s of students) await until(s, (c) => c.phase === "voting" && c.question !== both.question, "the new question reaches a phone");
    await vote(students[0], "A", 0);
    await vote(students[1], "C", 0);
    await until(teacher, (c) => c.answered && c.answered[0] === 2, "the console counts two votes before the restart");
    console.log("note: stopping the server mid-round");
    restarting = true;
    await cls_.stop();
    console.log("note: the server stopped");
    for (const p of [teacher, ...students]) await until(p, (c) => c.status !== "Joined", "a device notices the server is gone");
    cls_ = await startClass(cls_.port, cls_.data);
    console.log("note: the server is back on the same port and folder");
    for (const p of [teacher, ...students]) await until(p, (c) => c.status === "Joined", "a device comes back by itself", 30000);
    restarting = false;
    const kept = await Promise.all(students.map(cls));
    check(kept[0].my_votes[0] !== "None" && kept[1].my_votes[0] !== "None" && kept[2].my_votes[0] === "None", "each phone keeps its own vote across the restart");
    await until(teacher, (c) => c.joined === 3 && c.answered && c.answered[0] === 2, "the console: the same three students, the two votes");
    await vote(students[2], "B", 0);
    await until(teacher, (c) => c.answered && c.answered[0] === 3, "the round goes on after the restart");
    await tap(teacher, "class-reveal", (c) => c.phase === "revealed", "the distribution after the restart");
    check(true, "a server restart mid-round: every device back, every vote kept");
    check(problems.length === 0, `no console error or uncaught exception${problems.length ? ": " + problems.join("; ") : ""}`);
  } finally {
    await context.close();
    await cls_.stop();
  }
}

main().catch((e) => {
  console.error(e.message);
  for (const p of problems) console.error(p);
  process.exit(1);
});
