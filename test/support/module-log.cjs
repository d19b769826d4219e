// Preloaded (NODE_OPTIONS=--require) by a test: at exit, writes every CommonJS module this process
// loaded to MODULE_LOG, one absolute path per line (ES modules are not listed; the CLI's own
// dependencies that are CommonJS, @oclif/core among them, are).
const fs = require('node:fs');
process.on('exit', () => {
  fs.writeFileSync(process.env.MODULE_LOG, Object.keys(require.cache).join('\n') + '\n');
});
