// Save on a miss: `path` copied under the key, renamed into place whole (parallel jobs may race); then the
// claim of main.js is given up, saved or not.
const fs = require("fs");
const path = require("path");
const stored = path.join(process.env.WAVEGIT_TEST_CACHE, process.env.INPUT_KEY);
try {
  if (process.env.STATE_hit !== "true" && fs.existsSync(process.env.INPUT_PATH) && !fs.existsSync(stored)) {
    const partial = `${stored}.partial-${process.pid}`;
    fs.cpSync(process.env.INPUT_PATH, partial, { recursive: true, verbatimSymlinks: true });
    try {
      fs.renameSync(partial, stored);
    } catch (error) {
      fs.rmSync(partial, { recursive: true, force: true });
    }
  }
} finally {
  if (process.env.STATE_claimed === "true") {
    fs.rmSync(`${stored}.claim`, { recursive: true, force: true });
  }
}
