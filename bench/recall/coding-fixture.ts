import type { FixtureQuestion, FixtureSession } from './fixture.js';

/**
 * Coding sessions written for this bench (no outside source): what an agent asks its memory about
 * last month's work. Each question names the turns that hold its answer. Dates in September 2026.
 */

const at = (day: number): number => Date.UTC(2026, 8, day, 9, 0);

export const CODING_SESSIONS: FixtureSession[] = [
  {
    id: 'code-uploader-retry',
    at: at(1),
    turns: [
      ['user', 'The payload uploader keeps hammering the API when it returns 429. Can you add a retry with backoff?'],
      ['assistant', 'I added exponential backoff to uploader.ts: retryBackoffMs starts at 250 and doubles up to 8 s, with full jitter, and it honours Retry-After when the server sends one.'],
      ['user', 'Cap the attempts at five, please.'],
      ['assistant', 'Done: MAX_UPLOAD_ATTEMPTS = 5 in uploader.config.ts; after the fifth failure the batch is parked in the dead-letter queue.'],
    ],
  },
  {
    id: 'code-flaky-test',
    at: at(3),
    turns: [
      ['user', 'test/socket.test.ts fails about one run in ten on CI with ECONNRESET.'],
      ['assistant', 'The server closes the socket before the client reads the last frame. I changed the test to await the close event instead of a fixed 50 ms sleep; 200 runs in a loop passed.'],
      ['user', 'Great, also mark it so we notice if it regresses.'],
      ['assistant', 'Added it to the flaky-watch list in vitest.config.ts with retry: 0, so any failure shows.'],
    ],
  },
  {
    id: 'code-db-migration',
    at: at(5),
    turns: [
      ['user', 'We need to rename the column user_name to display_name in the accounts table without downtime.'],
      ['assistant', 'Plan: add display_name, dual-write from the app, backfill in batches of 5,000 rows, switch reads, then drop user_name in a later release. Migration 0042 adds the column and the trigger.'],
      ['user', 'How long will the backfill take on production?'],
      ['assistant', 'About 40 minutes for the 12 million rows at 5,000 rows per batch with a 100 ms pause between batches, measured on the staging copy.'],
    ],
  },
  {
    id: 'code-docker-image',
    at: at(8),
    turns: [
      ['user', 'The Docker image is 1.9 GB. Why is it so big?'],
      ['assistant', 'The build stage copied node_modules with the dev dependencies and the whole .git directory. A multi-stage build with npm ci --omit=dev and a .dockerignore brings it down to 210 MB.'],
      ['user', 'Which base image did you pick?'],
      ['assistant', 'node:20-bookworm-slim for the runtime stage; alpine broke better-sqlite3 prebuilds because of musl.'],
    ],
  },
  {
    id: 'code-auth-bug',
    at: at(10),
    turns: [
      ['user', 'Users get logged out after exactly one hour even though they are active.'],
      ['assistant', 'The refresh token rotation never ran: the interceptor checked expiresAt in seconds against Date.now() in milliseconds. I fixed the unit mismatch in auth/refresh.ts and added a test that advances fake timers past the hour.'],
    ],
  },
  {
    id: 'code-perf-search',
    at: at(12),
    turns: [
      ['user', 'Search on the orders page takes three seconds for big customers.'],
      ['assistant', 'EXPLAIN showed a sequential scan: the filter used lower(email) but the index is on email. I added a functional index on lower(email); the query now takes 12 ms.'],
      ['user', 'Did you check the write overhead of the new index?'],
      ['assistant', 'Inserts into orders slowed by about 3% in the load test, well within budget.'],
    ],
  },
  {
    id: 'code-release',
    at: at(15),
    turns: [
      ['user', 'What is left before we can tag version 2.4.0?'],
      ['assistant', 'Two things: the changelog entry for the CSV export, and bumping WIDGET_VERSION in constants.ts. Everything else is merged.'],
      ['user', 'Bump it and tag.'],
      ['assistant', 'WIDGET_VERSION is now 2.4.0, the changelog has the CSV export entry, and v2.4.0 is tagged and pushed; the release workflow published the package.'],
    ],
  },
  {
    id: 'code-logging',
    at: at(18),
    turns: [
      ['user', 'Our logs contain customer email addresses. We must stop that.'],
      ['assistant', 'I added a redaction step to the pino serializer that masks anything matching an email pattern, and a lint rule that forbids logging the raw request body.'],
      ['user', 'What about the logs we already shipped?'],
      ['assistant', 'The retention is 14 days in the log store, so they age out by the 2nd of October; I opened a ticket to purge them now instead of waiting.'],
    ],
  },
  {
    id: 'code-feature-flag',
    at: at(21),
    turns: [
      ['user', 'Put the new checkout flow behind a feature flag so we can roll it out gradually.'],
      ['assistant', 'The flag is checkout_v2 in flags.yaml, default off; it rolls out by hashing the account id, starting at 5% of accounts.'],
    ],
  },
  {
    id: 'code-memory-leak',
    at: at(24),
    turns: [
      ['user', 'The worker process grows to 2 GB of memory after a day.'],
      ['assistant', 'A heap snapshot showed the event listeners on the job emitter were never removed: every job added a listener. I switched to once() and removed the listener in the finally block; memory is flat at 180 MB over a 6-hour soak.'],
    ],
  },
  {
    id: 'code-timezone',
    at: at(27),
    turns: [
      ['user', 'The daily report shows yesterday for customers in Tokyo.'],
      ['assistant', 'The report computed the day boundary in UTC on the server. It now uses the account time zone from the settings table and date-fns-tz to cut the day.'],
    ],
  },
  {
    id: 'code-ci-cache',
    at: at(29),
    turns: [
      ['user', 'CI takes 14 minutes, mostly npm install.'],
      ['assistant', 'I added actions/cache keyed on the lockfile hash for the npm cache directory and split the tests into 3 shards; a run now takes about 5 minutes.'],
    ],
  },
];

export const CODING_QUESTIONS: FixtureQuestion[] = [
  { id: 'code-q01', type: 'coding', question: 'What backoff did we use when the uploader retried after rate limiting?', evidence: [['code-uploader-retry', 1]] },
  { id: 'code-q02', type: 'coding', question: 'How many upload attempts are allowed before a batch gives up?', evidence: [['code-uploader-retry', 3]] },
  { id: 'code-q03', type: 'coding', question: 'Why was the socket test flaky and how was it fixed?', evidence: [['code-flaky-test', 1]] },
  { id: 'code-q04', type: 'coding', question: 'Where do we track tests that used to be flaky?', evidence: [['code-flaky-test', 3]] },
  { id: 'code-q05', type: 'coding', question: 'What was the plan to rename the user name column without downtime?', evidence: [['code-db-migration', 1]] },
  { id: 'code-q06', type: 'coding', question: 'How long does the display name backfill take in production?', evidence: [['code-db-migration', 3]] },
  { id: 'code-q07', type: 'coding', question: 'How did we shrink the docker image?', evidence: [['code-docker-image', 1]] },
  { id: 'code-q08', type: 'coding', question: 'Which base image do we run on and why not alpine?', evidence: [['code-docker-image', 3]] },
  { id: 'code-q09', type: 'coding', question: 'Why were users logged out after an hour?', evidence: [['code-auth-bug', 0], ['code-auth-bug', 1]] },
  { id: 'code-q10', type: 'coding', question: 'What index did we add to speed up searching orders by email?', evidence: [['code-perf-search', 1]] },
  { id: 'code-q11', type: 'coding', question: 'How much slower are order inserts with the new index?', evidence: [['code-perf-search', 3]] },
  { id: 'code-q12', type: 'coding', question: 'What was missing before tagging 2.4.0?', evidence: [['code-release', 1]] },
  { id: 'code-q13', type: 'coding', question: 'When did we bump the widget version?', evidence: [['code-release', 2], ['code-release', 3]] },
  { id: 'code-q14', type: 'coding', question: 'How do we keep emails out of the logs?', evidence: [['code-logging', 1]] },
  { id: 'code-q15', type: 'coding', question: 'What happens to the logs that already contained emails?', evidence: [['code-logging', 3]] },
  { id: 'code-q16', type: 'coding', question: 'What is the feature flag for the new checkout called and how does it roll out?', evidence: [['code-feature-flag', 1]] },
  { id: 'code-q17', type: 'coding', question: 'What caused the worker memory leak?', evidence: [['code-memory-leak', 1]] },
  { id: 'code-q18', type: 'coding', question: 'Why did the daily report show the wrong day in Tokyo?', evidence: [['code-timezone', 0], ['code-timezone', 1]] },
  { id: 'code-q19', type: 'coding', question: 'How did we make CI faster?', evidence: [['code-ci-cache', 1]] },
  { id: 'code-q20', type: 'coding', question: 'which library do we use for time zones in reports', evidence: [['code-timezone', 1]] },
  { id: 'code-q21', type: 'coding', question: 'dead letter queue uploader', evidence: [['code-uploader-retry', 3]] },
  { id: 'code-q22', type: 'coding', question: 'ECONNRESET', evidence: [['code-flaky-test', 0], ['code-flaky-test', 1]] },
  { id: 'code-q23', type: 'coding', question: 'What did the heap snapshot show?', evidence: [['code-memory-leak', 1]] },
  { id: 'code-q24', type: 'coding', question: 'How many CI shards do the tests run in?', evidence: [['code-ci-cache', 1]] },
];
