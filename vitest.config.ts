import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // A timeout here only catches a hang: it is never what a test asserts. A busy 2-core machine
    // (other builds, CI neighbours) makes a test that takes 3 s alone take ten times that, and the
    // tests that start `dnsplane` processes take longest, so the bounds are generous and no test
    // sets a shorter one of its own.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
