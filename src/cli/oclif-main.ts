/**
 * oclif's entry, bundled with the commands (`npm run build`) so that bin/run.js and every command share
 * one copy of @oclif/core, loaded as a few files instead of some 150 modules.
 */
export { execute } from '@oclif/core';
