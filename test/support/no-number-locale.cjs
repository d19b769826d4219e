// Preloaded (NODE_OPTIONS=--require) by a test: ICU's number formatting throws, so a path that
// formats a number through it (the first call builds ICU's formatter, ~19 ms) fails visibly.
Number.prototype.toLocaleString = function () {
  throw new Error('Number#toLocaleString called');
};
