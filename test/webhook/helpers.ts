/**
 * Kept only for test/e2e/hostile.test.ts, which another change owns: captureLogger lives in
 * test/helpers/log-capture.ts. Remove this file once hostile.test.ts imports it from there.
 */
export { captureLogger } from '../helpers/log-capture.js';
