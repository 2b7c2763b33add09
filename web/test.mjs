// Browser test of the web edition (scripts/web-test.sh): serves dist/, opens the Playground at
// TP=2 in headless chromium and checks that
//   1. the app starts with no console error and no uncaught exception,
//   2. its screenshot is not blank (many distinct colours),
//   3. a click on the Playground's "TP=4" button makes the scenario TP=4 and changes the split
//      drawn (the weight matrices, cut per GPU), and pressing "2" brings back the first picture,
//   4. a progress file imported through the file picker exports back unchanged,
//   5. the design lab's first challenge, opened from the URL, is solved by clicking its matrices
//      and graded three stars by the engine,
//   6. every other view opens from ?view= without an error.
// Controls are clicked where the app says it drew them (window.tplab.target), not at fixed
// coordinates.
// Screenshots go to $WEB_TEST_OUT (default: web/out/).
import { mkdtemp, mkdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { inflateSync } from "node:zlib";
import { launch, serve, waitForApp } from "./common.mjs";

const here = new URL(".", import.meta.url).pathname;
const dist = resolve(here, "..", "dist");
const out = resolve(process.env.WEB_TEST_OUT ?? join(here, "out"));

// Where the mouse rests between shots (the empty bottom of the side bar: no hover highlight).
const REST = { x: 60, y: 790 };

/** Decodes an 8-bit RGBA or RGB, non-interlaced PNG (what chromium's screenshots are). */
export function decodePng(buf) {
  let pos = 8;
  let width = 0, height = 0, channels = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString("ascii", pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = data.subarray(8, 13);
      if (depth !== 8 || interlace !== 0 || (colour !== 6 && colour !== 2)) {
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`);
      }
      channels = colour === 6 ? 4 : 3;
    } else if (type === "IDAT") {
      idat.push(data);
    }
    pos += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const px = Buffer.alloc(width * height * 4);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? line[i - channels] : 0;
      const b = prev[i];
      const c = i >= channels ? prev[i - channels] : 0;
      let v = line[i];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      line[i] = v & 0xff;
    }
    for (let x = 0; x < width; x++) {
      for (let k = 0; k < 4; k++) {
        px[(y * width + x) * 4 + k] = k < channels ? line[x * channels + k] : 255;
      }
    }
    prev = line;
  }
  return { width, height, px };
}

function distinctColours({ px }) {
  const seen = new Set();
  for (let i = 0; i < px.length; i += 4) seen.add(px.readUInt32BE(i));
  return seen.size;
}

/** Pixels that differ between two same-sized images, inside the box { x0, y0, x1, y1 }. */
function differing(a, b, box) {
  let n = 0;
  for (let y = box.y0; y < box.y1; y++) {
    for (let x = box.x0; x < box.x1; x++) {
      const i = (y * a.width + x) * 4;
      if (a.px.readUInt32BE(i) !== b.px.readUInt32BE(i)) n++;
    }
  }
  return n;
}

// A click as a person makes it: the pointer arrives, then the button goes down and up in later
// frames (egui reads the pointer once a frame). Then waits for the page event the click should
// cause (a file picker, a download). Under load a frame can come late and the click go unseen:
// up to three tries, each noted, before the test fails.
async function clickFor(page, at, event) {
  for (let attempt = 1; ; attempt++) {
    const waiting = page.waitForEvent(event, { timeout: 5000 });
    await page.mouse.move(at.x, at.y);
    await page.waitForTimeout(150);
    await page.mouse.down();
    await page.waitForTimeout(80);
    await page.mouse.up();
    try {
      return await waiting;
    } catch (e) {
      if (attempt === 3) throw e;
      console.log(`note: no ${event} after click ${attempt} at (${at.x}, ${at.y}); clicking again`);
    }
  }
}

/** Where the app last drew the control named `name` (`platform::mark`), in page pixels. */
async function target(page, name) {
  const handle = await page.waitForFunction(
    (n) => {
      const at = window.tplab.target(n);
      return at.length === 2 ? { x: at[0], y: at[1] } : null;
    },
    name,
    { timeout: 5000 },
  );
  return handle.jsonValue();
}

/** What the view `id` saves, parsed. */
async function viewState(page, id) {
  return JSON.parse((await page.evaluate((v) => window.tplab.viewState(v), id)) || "{}");
}

// Clicks the control named `name` until `done(state of view)` holds (a click can go unseen
// under load, and a click moves the layout: the control is looked up again before each try).
async function clickUntil(page, name, view, done, what) {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const at = await target(page, name);
    await page.mouse.move(at.x, at.y);
    await page.waitForTimeout(150);
    await page.mouse.down();
    await page.waitForTimeout(80);
    await page.mouse.up();
    await page.mouse.move(REST.x, REST.y);
    for (let i = 0; i < 20; i++) {
      await page.waitForTimeout(100);
      if (done(await viewState(page, view))) return;
    }
    console.log(`note: ${what} did not happen after click ${attempt} on ${name}; clicking again`);
  }
  throw new Error(`FAILED: ${what} (three clicks on ${name})`);
}

function check(ok, what) {
  if (!ok) throw new Error(`FAILED: ${what}`);
  console.log(`ok: ${what}`);
}

// Console errors, uncaught exceptions and failed requests, reported with any failure.
const problems = [];

async function main() {
  await mkdir(out, { recursive: true });
  const server = await serve(dist);
  const profile = await mkdtemp(join(tmpdir(), "tplab-chromium-"));
  const context = await launch(profile);
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console error: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));

    await page.goto(`${server.url}?view=playground&tp=2`);
    await waitForApp(page);
    check((await page.evaluate(() => window.tplab.view())) === "playground", "the Playground is on screen");
    check((await page.evaluate(() => window.tplab.tp())) === 2, "the scenario is at TP=2 (from ?tp=2)");
    await page.mouse.move(REST.x, REST.y);
    // A few frames for fonts and the first layout pass to settle.
    await page.waitForTimeout(1500);
    const shot = async (name) => {
      const png = await page.screenshot({ path: join(out, name) });
      return decodePng(png);
    };
    const before = await shot("tp2.png");
    const colours = distinctColours(before);
    check(colours >= 50, `the screenshot is not blank (${colours} distinct colours)`);

    {
      const tp4 = await target(page, "playground-tp4");
      await page.mouse.click(tp4.x, tp4.y);
      await page.mouse.move(REST.x, REST.y);
      await page
        .waitForFunction(() => window.tplab.tp() === 4, null, { timeout: 5000 })
        .catch(() => {});
      const tp = await page.evaluate(() => window.tplab.tp());
      check(tp === 4, `a click on "TP=4" at (${Math.round(tp4.x)}, ${Math.round(tp4.y)}) set TP=4 (TP is ${tp})`);
      await page.waitForTimeout(800);
      const after = await shot("tp4.png");
      // The central panel: right of the 170-px side bar.
      const panel = { x0: 180, y0: 0, x1: before.width, y1: before.height };
      const changed = differing(before, after, panel);
      check(changed > 2000, `the split drawn changed (${changed} pixels of the central panel)`);

      // Back to TP=2 with the keyboard (digits set TP): the first picture returns.
      await page.keyboard.press("2");
      await page.waitForFunction(() => window.tplab.tp() === 2, null, { timeout: 5000 });
      await page.waitForTimeout(800);
      const back = await shot("tp2-again.png");
      const left = differing(before, back, panel);
      check(left < changed / 20, `pressing 2 brings TP=2's picture back (${left} pixels differ)`);
    }
    // Progress in local storage: import a progress file (the desktop's format) through the side
    // bar's file picker, export it back as a download; the record survives the round trip.
    const progress = {
      schema: 2,
      learner: "Ada Test",
      lang: "tr",
      answers: [
        { question_id: "faq-1", correct: true, lang: "tr", exam: false, at_unix_s: 1764547200 },
        { question_id: "faq-2", correct: false, lang: "tr", exam: false, at_unix_s: 1764547260 },
      ],
      exams: [],
      lessons_read: ["01-why"],
    };
    const chooser = await clickFor(page, await target(page, "progress-import"), "filechooser");
    await chooser.setFiles({
      name: "ada-test.json",
      mimeType: "application/json",
      buffer: Buffer.from(JSON.stringify(progress)),
    });
    await page.waitForTimeout(500);
    const download = await clickFor(page, await target(page, "progress-export"), "download");
    const exported = JSON.parse(await readFile(await download.path(), "utf8"));
    check(
      /^tplab-progress-ada-test-[0-9a-f]{8}\.json$/.test(download.suggestedFilename()) &&
        exported.learner === "Ada Test" &&
        exported.answers.length === 2 &&
        exported.lessons_read[0] === "01-why",
      `a progress file imported through the file picker exports back as ${download.suggestedFilename()}`,
    );
    await page.mouse.move(REST.x, REST.y);

    // The design lab: challenge 1 opened from the URL, solved by clicking the matrices (fc1 by
    // columns: one click; fc2 by rows: two), checked by the engine, its stars saved.
    await page.goto(`${server.url}?view=design&challenge=1`);
    await waitForApp(page);
    check((await viewState(page, "design")).stage === 1, "?view=design&challenge=1 opens challenge 1");
    await clickUntil(page, "design-matrix-W1", "design", (s) => s.setup?.fc1 === "columns", "fc1 split by columns");
    await clickUntil(page, "design-matrix-W2", "design", (s) => s.setup?.fc2 === "columns", "fc2 split by columns");
    await clickUntil(page, "design-matrix-W2", "design", (s) => s.setup?.fc2 === "rows", "fc2 split by rows");
    await clickUntil(page, "design-check", "design", (s) => (s.stars?.["mlp-one-all-reduce"] ?? 0) > 0, "the check");
    const stars = (await viewState(page, "design")).stars["mlp-one-all-reduce"];
    await page.screenshot({ path: join(out, "design-solved.png") });
    check(stars === 3, `challenge 1 solved by clicking: fc1 by columns, fc2 by rows, graded ${stars} stars`);

    // Every other view opens from the URL and draws without an error (Verify runs the sharded
    // pass against the reference on open; the GPU view explains that real GPUs need the desktop).
    const views = { walkthrough: "step", collectives: "collectives", timeline: "timeline",
      memory: "memory", verify: "verify", precision: "precision", vocab: "vocab", train: "train",
      serve: "serve", planner: "planner", pipeline: "pipeline", cluster: "cluster", moe: "moe", lessons: "lessons",
      quiz: "quiz", gpu: "gpu" };
    for (const [name, id] of Object.entries(views)) {
      await page.goto(`${server.url}?view=${name}`);
      await waitForApp(page);
      await page.waitForTimeout(700);
      const shown = await page.evaluate(() => window.tplab.view());
      if (shown !== id) problems.push(`?view=${name} opened ${shown}`);
    }
    await page.screenshot({ path: join(out, "gpu.png") });
    check(true, `${Object.keys(views).length} more views opened from ?view=`);
    check(problems.length === 0, `no console errors or exceptions${problems.length ? ":\n  " + problems.join("\n  ") : ""}`);
  } finally {
    await context.close();
    await server.close();
    await rm(profile, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e.message ?? e);
  if (problems.length) console.error("page problems:\n  " + problems.join("\n  "));
  process.exit(1);
});
