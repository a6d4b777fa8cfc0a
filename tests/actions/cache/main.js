// Restore: `path` becomes a link to the key's folder when it was saved before (a copy would take seconds
// for a virtualenv; nothing writes into a restored path here).
const fs = require("fs");
const path = require("path");
const stored = path.join(process.env.WAVEGIT_TEST_CACHE, process.env.INPUT_KEY);
// A miss claims the key until its post step saved it (or gave up): a job that misses while another one
// holds the claim waits for that save, so jobs started together (two test processes, a matrix) build the
// cached folder once. A claim older than CLAIM_STALE_MS is a dead job's and is taken over.
const claim = `${stored}.claim`;
const CLAIM_STALE_MS = 5 * 60 * 1000;
const WAIT_MS = 3 * 60 * 1000;

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function claimed() {
  try {
    fs.mkdirSync(claim);
    return true;
  } catch (error) {
    if (error.code !== "EEXIST") throw error;
  }
  try {
    if (Date.now() - fs.statSync(claim).mtimeMs > CLAIM_STALE_MS) {
      fs.rmSync(claim, { recursive: true, force: true });
      return claimed();
    }
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
  }
  return false;
}

let owner = false;
if (!fs.existsSync(stored) && !(owner = claimed())) {
  for (const end = Date.now() + WAIT_MS; Date.now() < end && fs.existsSync(claim) && !fs.existsSync(stored);) {
    sleep(200);
  }
}
const hit = fs.existsSync(stored);
if (owner && hit) {
  fs.rmSync(claim, { recursive: true, force: true });
}
if (hit) {
  // Marks the entry as used: the tests remove the ones no run restored for days (tests/helpers/act.py).
  const now = new Date();
  fs.utimesSync(stored, now, now);
  // Extracted over what is there, as the real cache's tar does.
  fs.rmSync(process.env.INPUT_PATH, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(process.env.INPUT_PATH), { recursive: true });
  fs.symlinkSync(stored, process.env.INPUT_PATH);
}
fs.appendFileSync(process.env.GITHUB_OUTPUT, `cache-hit=${hit}\n`);
fs.appendFileSync(process.env.GITHUB_STATE, `hit=${hit}\nclaimed=${owner && !hit}\n`);
