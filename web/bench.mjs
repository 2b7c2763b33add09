// Benchmark of the web edition (scripts/web-bench.sh): the page's download size (raw and gzip)
// and the time from navigation to the app's first frame in headless chromium, served from
// 127.0.0.1 (so no network time: on a classroom's Wi-Fi add the download), each run in a fresh
// profile (nothing cached, the wasm compiled anew).
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { launch, serve, waitForApp } from "./common.mjs";

const here = new URL(".", import.meta.url).pathname;
const dist = resolve(here, "..", "dist");
const runs = Number(process.env.WEB_BENCH_RUNS ?? 5);
const mib = (n) => `${(n / (1 << 20)).toFixed(2)} MiB`;

let raw = 0;
let gz = 0;
for (const f of ["index.html", "tplab.js", "tplab_bg.wasm"]) {
  const bytes = await readFile(join(dist, f));
  const z = gzipSync(bytes, { level: 6 }).length;
  raw += bytes.length;
  gz += z;
  console.log(`${f.padEnd(14)} ${mib(bytes.length).padStart(10)} raw ${mib(z).padStart(10)} gzip`);
}
console.log(`${"page".padEnd(14)} ${mib(raw).padStart(10)} raw ${mib(gz).padStart(10)} gzip (level 6, as web servers send it)`);

const server = await serve(dist);
const times = [];
try {
  for (let i = 0; i < runs; i++) {
    const profile = await mkdtemp(join(tmpdir(), "tplab-bench-"));
    const context = await launch(profile);
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`${server.url}?view=playground&tp=4`);
      await waitForApp(page);
      const ms = await page.evaluate(
        () => performance.getEntriesByName("tplab-first-frame")[0].startTime,
      );
      times.push(ms);
      console.log(`run ${i + 1}: first frame ${ms.toFixed(0)} ms after navigation`);
    } finally {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    }
  }
} finally {
  await server.close();
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(
  `time to first frame: median ${median.toFixed(0)} ms of ${runs} cold starts ` +
    `(min ${times[0].toFixed(0)}, max ${times[times.length - 1].toFixed(0)})`,
);
