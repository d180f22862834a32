// The gateway's HTTP APIs as the page uses them: JSON requests carrying the API key when
// one is set, and a reader for streamed (SSE) chat answers. Every failure becomes a
// GatewayError whose message is what the page shows the user.

const KEY = 'switchboard.apiKey';

export function apiKey() {
  return sessionStorage.getItem(KEY) ?? '';
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

export class GatewayError extends Error {
  constructor(message, { status, code } = {}) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** `HTTP 502 · backend_unreachable` */
  get label() {
    return [this.status && `HTTP ${this.status}`, this.code].filter(Boolean).join(' · ');
  }
}

async function send(method, path, { body, headers = {}, signal } = {}) {
  const all = { ...headers };
  if (body !== undefined) all['content-type'] = 'application/json';
  const key = apiKey();
  if (key) all.authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: all,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new GatewayError(`cannot reach the gateway: ${error.message}`);
  }
  if (!response.ok) throw await failure(response);
  return response;
}

/** The error a failed response describes, in OpenAI's error shape or not. */
async function failure(response) {
  const text = await response.text().catch(() => '');
  let error = null;
  try {
    error = JSON.parse(text).error;
  } catch {
    // not JSON: shown as it came
  }
  if (error && typeof error.message === 'string') {
    return new GatewayError(error.message, { status: response.status, code: error.code });
  }
  const detail = text.trim().slice(0, 300) || response.statusText || 'no body';
  return new GatewayError(detail, { status: response.status });
}

export async function getJson(path) {
  return (await send('GET', path)).json();
}

export async function postJson(path, body) {
  return (await send('POST', path, { body })).json();
}

/**
 * Posts a streamed chat completion and hands each parsed chunk to onChunk. Resolves at
 * `data: [DONE]`; rejects with the stream's error event, or when the stream ends early.
 */
export async function streamChat(body, { characterEvents = false, onChunk, signal }) {
  const headers = characterEvents ? { 'x-switchboard-character-events': 'true' } : {};
  const response = await send('POST', '/v1/chat/completions', { body, headers, signal });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let end = buffer.search(/\r?\n\r?\n/); end >= 0; end = buffer.search(/\r?\n\r?\n/)) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (!data) continue;
      if (data === '[DONE]') return;
      let chunk;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw new GatewayError(`the stream sent an event that is not JSON: ${data.slice(0, 200)}`);
      }
      if (chunk.error) {
        throw new GatewayError(chunk.error.message ?? JSON.stringify(chunk.error), {
          code: chunk.error.code,
        });
      }
      onChunk(chunk);
    }
  }
  throw new GatewayError('the stream ended before the answer was complete (no [DONE])');
}
