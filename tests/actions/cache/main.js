// Restore: the key's folder, copied to `path`, when it was saved before.
const fs = require("fs");
const path = require("path");
const stored = path.join(process.env.WAVEGIT_TEST_CACHE, process.env.INPUT_KEY);
const hit = fs.existsSync(stored);
if (hit) {
  // Extracted over what is there, as the real cache's tar does.
  fs.rmSync(process.env.INPUT_PATH, { recursive: true, force: true });
  fs.cpSync(stored, process.env.INPUT_PATH, { recursive: true, verbatimSymlinks: true });
}
fs.appendFileSync(process.env.GITHUB_OUTPUT, `cache-hit=${hit}\n`);
fs.appendFileSync(process.env.GITHUB_STATE, `hit=${hit}\n`);
