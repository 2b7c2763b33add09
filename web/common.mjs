// Shared by the browser test and the benchmark: a static server for dist/ and headless chromium.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { chromium } from "playwright-core";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".json": "application/json",
};

/** Serves `dir` on 127.0.0.1 at a free port; resolves to { url, close }. */
export async function serve(dir) {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    const file = join(dir, path === "/" ? "index.html" : path);
    if (!file.startsWith(normalize(dir))) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404).end("not found");
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((ok) => server.close(ok)) };
}

/** Debian's chromium, headless, with a fresh profile; WebGL 2 through SwiftShader (no GPU). */
export async function launch(userDataDir) {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: 1,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      // No GPU here: WebGL on the CPU.
      "--use-angle=swiftshader",
      "--enable-unsafe-swiftshader",
    ],
  });
}

/** Waits until the app runs with `view` on screen and has drawn its first frame. */
export async function waitForApp(page, timeoutMs = 60000) {
  await page.waitForFunction(
    () => {
      try {
        // tp() throws until the wasm module is instantiated, answers 0 until the app exists.
        return (
          window.tplab.tp() > 0 && performance.getEntriesByName("tplab-first-frame").length > 0
        );
      } catch {
        return false;
      }
    },
    null,
    { timeout: timeoutMs, polling: 50 },
  );
}
