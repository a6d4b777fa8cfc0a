// Restore: `path` becomes a link to the key's folder when it was saved before (a copy would take seconds
// for a virtualenv; nothing writes into a restored path here).
const fs = require("fs");
const path = require("path");
const stored = path.join(process.env.WAVEGIT_TEST_CACHE, process.env.INPUT_KEY);
const hit = fs.existsSync(stored);
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
fs.appendFileSync(process.env.GITHUB_STATE, `hit=${hit}\n`);
