// What the simulator answers when no SIM directive scripts it. A newcomer's `make run` should show
// what the service is about, streaming and rendering, so the default is a short Markdown answer sent
// word by word at a model's pace. Tests and the bench want the old instant one-line echo instead:
// they choose it through `SIM_DEFAULT_REPLY=echo` or the `defaultReply` option of startSimulator.

export type DefaultReplyMode = 'markdown' | 'echo';

export interface DefaultReply {
  mode: DefaultReplyMode;
  /** Deltas per second of the Markdown answer; 0 sends as fast as the socket takes them. */
  rate: number;
}

export class DefaultReplyConfigError extends Error {
  readonly code = 'SIM_ERR_DEFAULT_REPLY_CONFIG';
}

/** About what a streaming chat model shows on screen. */
export const DEFAULT_RATE = 40;

const MODES: readonly DefaultReplyMode[] = ['markdown', 'echo'];

/** Reads SIM_DEFAULT_REPLY (markdown | echo) and SIM_DEFAULT_RATE (deltas per second, 0 = unpaced). */
export function defaultReplyFromEnv(env: NodeJS.ProcessEnv = process.env): DefaultReply {
  const mode = (env.SIM_DEFAULT_REPLY?.trim() || 'markdown') as DefaultReplyMode;
  if (!MODES.includes(mode)) throw new DefaultReplyConfigError(`SIM_DEFAULT_REPLY: must be markdown or echo, got ${JSON.stringify(env.SIM_DEFAULT_REPLY)}`);
  const rawRate = env.SIM_DEFAULT_RATE?.trim();
  const rate = rawRate ? Number(rawRate) : DEFAULT_RATE;
  if (!Number.isFinite(rate) || rate < 0) throw new DefaultReplyConfigError(`SIM_DEFAULT_RATE: must be a non-negative number of deltas per second, got ${JSON.stringify(rawRate)}`);
  return { mode, rate };
}

export function echoReply(userText: string): string {
  return 'Simulated reply to: ' + userText.trim().slice(0, 60);
}

/**
 * A few sentences of Markdown: a heading made of the user's first words (so a title model asked about
 * the message names the chat after it), a list and a short code block.
 */
export function markdownReply(userText: string): string {
  // Markdown marks are dropped, not escaped: the heading doubles as the chat's title.
  const plain = userText.replace(/[\\`*_[\]<>#|]/g, ' ');
  const heading = plain.trim().split(/\s+/).filter(Boolean).slice(0, 6).join(' ').slice(0, 60) || 'A simulated answer';
  return [
    `## ${heading}`,
    '',
    '*A simulated answer.* It comes from the offline provider simulator, streamed word by word the way a real model answers, so the page shows **streaming** and **Markdown rendering** at once.',
    '',
    'What the simulator can do:',
    '',
    '- answer with any text, at any pace, through a `SIM {…}` line in your message;',
    "- call the service's tools, fail with a provider's real error, or cut the stream;",
    '- speak the wire formats of four providers and two search engines.',
    '',
    'For example, this message would ask for a fixed answer in four pieces:',
    '',
    '```ts',
    'const message = \'SIM {"reply":"Paris is the capital of France.","deltas":4}\';',
    'await send(message);',
    '```',
    '',
    'See `src/sim/README.md` for every directive.',
  ].join('\n');
}
