import { describe, expect, it } from 'vitest';
import { InvalidInputError, NotFoundError, UnauthenticatedError } from '../../src/core/errors.js';
import { WebhookError } from '../../src/webhook/backend.js';
import { fromCoreError } from '../../src/webhook/core-backend.js';

describe('core errors as the webhook statuses external-dns acts on', () => {
  it('a not-found keeps its message (a 500 external-dns logs and retries), as a bad input does', () => {
    const notFound = fromCoreError(new NotFoundError('zone', 'gone.test'));
    expect(notFound).toBeInstanceOf(WebhookError);
    expect((notFound as WebhookError).status).toBe(500);
    expect((notFound as WebhookError).message).toBe('zone "gone.test" not found');
    const bad = fromCoreError(new InvalidInputError('changes', 'must be a list'));
    expect((bad as WebhookError).status).toBe(500);
  });

  it('bad credentials are a 401 that names how to pass them; an unknown error is left for the generic answer', () => {
    expect((fromCoreError(new UnauthenticatedError('nope')) as WebhookError).status).toBe(401);
    const other = new TypeError('boom');
    expect(fromCoreError(other)).toBe(other);
  });
});
