// Turns a provider-neutral view of the conversation plus the SIM directive into what the model
// "does" this round: call tools, or answer with text split into deltas. Every provider module
// normalizes its wire format into `Conversation` and renders the resulting `Plan` back.
import { echoReply, markdownReply, type DefaultReply } from './default-reply.ts';
import { parseDirective, type Directive } from './directives.ts';
import { tokensFor } from './http.ts';

export interface AttachmentInfo {
  /** The wire part type: input_image, image_url, image, input_file, file, document, … */
  type: string;
  mediaType?: string;
  /** Decoded size of inline (base64) data. */
  bytes?: number;
  url?: string;
  filename?: string;
}

export type Turn =
  | { kind: 'user'; text: string; parts: string[]; attachments: AttachmentInfo[] }
  | { kind: 'assistant'; text: string }
  | { kind: 'calls'; callIds: string[] }
  | { kind: 'result'; callId: string; output: string };

export interface Conversation {
  system: string[];
  turns: Turn[];
}

export interface PlannedCall {
  name: string;
  arguments: string;
}

/** The text of an answer, delivered as `count` deltas. */
export interface Deltas {
  count: number;
  /** Each delta's text is the send time (`<ms>|`), so the full text exists only after sending. */
  stamped: boolean;
  /** The pieces when not stamped (joined, they are `text`). */
  pieces: string[];
  text: string;
}

export interface Plan {
  directive: Directive;
  /** Non-null: this round calls these tools instead of answering. */
  calls: PlannedCall[] | null;
  deltas: Deltas;
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, read from the prompt cache as `usage.cached` scripts it (provider_b also has its own cache: prompt-cache.ts). */
  cachedTokens: number;
}

export function stampNow(): string {
  return (performance.timeOrigin + performance.now()).toFixed(3) + '|';
}

export function deltaText(d: Deltas, i: number): string {
  return d.stamped ? stampNow() : d.pieces[i]!;
}

/** The whole answer for non-streaming calls (stamps all taken now). */
export function fullText(d: Deltas): string {
  if (!d.stamped) return d.text;
  let s = '';
  for (let i = 0; i < d.count; i++) s += stampNow();
  return s;
}

/** `defaults`: the answer when no SIM directive scripts this round (the old instant echo unless given). */
export function plan(conv: Conversation, defaults: DefaultReply = { mode: 'echo', rate: 0 }): Plan {
  let lastUser = -1;
  for (let i = conv.turns.length - 1; i >= 0; i--) {
    if (conv.turns[i]!.kind === 'user') {
      lastUser = i;
      break;
    }
  }
  const user = lastUser >= 0 ? (conv.turns[lastUser] as Extract<Turn, { kind: 'user' }>) : null;
  const parsed = parseDirective(user?.text ?? '');
  const d = parsed.directive;

  // A round counts as done when tool results for it came back: consecutive results are one round.
  let roundsDone = 0;
  let lastOutput: string | null = null;
  for (let i = lastUser + 1; i < conv.turns.length; i++) {
    const t = conv.turns[i]!;
    if (t.kind === 'result') {
      if (conv.turns[i - 1]?.kind !== 'result') roundsDone++;
      lastOutput = t.output;
    }
  }

  const inputChars = conv.system.reduce((n, s) => n + s.length, 0) + conversationChars(conv.turns);
  const inputTokens = d.usage?.input ?? tokensFor(inputChars);
  const cachedTokens = Math.min(d.usage?.cached ?? 0, inputTokens);

  if (d.tools && roundsDone < (d.toolRounds ?? 1)) {
    const calls = d.tools.map((t) => ({ name: t.name, arguments: JSON.stringify(t.args) }));
    const argChars = calls.reduce((n, c) => n + c.arguments.length + c.name.length, 0);
    return {
      directive: d,
      calls,
      deltas: splitDeltas('', undefined, false),
      inputTokens,
      cachedTokens,
      outputTokens: d.usage?.output ?? tokensFor(argChars),
    };
  }

  const markdown = parsed.error === null && Object.keys(d).length === 0 && defaults.mode === 'markdown';
  const reply = parsed.error ?? (markdown ? markdownReply(parsed.rest) : replyText(d, conv, user, parsed.rest, lastOutput));
  const text = parsed.error === null && d.replyChars !== undefined ? lengthen(reply, d.replyChars) : reply;
  const deltas = splitDeltas(text, d.deltas, d.stamp === true);
  // The pace rides on the directive, which is what the stream writers read.
  const directive = markdown && defaults.rate > 0 ? { ...d, rate: defaults.rate } : d;
  return { directive, calls: null, deltas, inputTokens, cachedTokens, outputTokens: d.usage?.output ?? deltas.count };
}

/**
 * The Messages API's continuation: a request whose last turn is an assistant turn continues that turn
 * rather than starting a new one. When its text is a prefix of the scripted answer, the plan answers
 * with the rest only, in the same pieces (the first one cut where the prefix ends). Otherwise, and for
 * tool rounds and stamped answers, the plan is unchanged.
 */
export function continuation(conv: Conversation, p: Plan): Plan {
  const last = conv.turns.at(-1);
  const { deltas } = p;
  if (last?.kind !== 'assistant' || last.text === '' || p.calls || deltas.stamped) return p;
  if (!deltas.text.startsWith(last.text) || deltas.text.length === last.text.length) return p;
  const pieces: string[] = [];
  let at = 0;
  for (const piece of deltas.pieces) {
    const end = at + piece.length;
    if (end > last.text.length) pieces.push(at >= last.text.length ? piece : piece.slice(last.text.length - at));
    at = end;
  }
  const rest = { count: pieces.length, stamped: false, pieces, text: pieces.join('') };
  return { ...p, deltas: rest, outputTokens: p.directive.usage?.output ?? rest.count };
}

function replyText(
  d: Directive,
  conv: Conversation,
  user: Extract<Turn, { kind: 'user' }> | null,
  rest: string,
  lastOutput: string | null,
): string {
  const echoes: string[] = [];
  if (d.echoSystem) echoes.push('SYSTEM:' + conv.system.join('\n'));
  if (d.echoInput) {
    echoes.push(JSON.stringify({ parts: user?.parts ?? [], attachments: user?.attachments ?? [] }));
  }
  if (echoes.length) return echoes.join('\n');
  if (d.reply !== undefined) return d.reply;
  if (d.tools && lastOutput !== null) return 'Tool results: ' + lastOutput.slice(0, 200);
  return echoReply(rest);
}

function conversationChars(turns: Turn[]): number {
  let n = 0;
  for (const t of turns) {
    if (t.kind === 'user' || t.kind === 'assistant') n += t.text.length;
    else if (t.kind === 'result') n += t.output.length;
    else n += 16 * t.callIds.length;
  }
  return n;
}

/**
 * Default: word-ish chunks (a short word rides with the next one). With `count`, exactly `count`
 * non-empty pieces: near-equal slices, or, when the text is shorter than `count`, the text
 * repeated (space-joined) until it is long enough — so the final text is then longer than `reply`.
 */
export function splitDeltas(text: string, count: number | undefined, stamped: boolean): Deltas {
  if (stamped) {
    const n = count ?? Math.max(1, wordChunks(text).length);
    return { count: n, stamped: true, pieces: [], text: '' };
  }
  if (count === undefined) {
    const pieces = wordChunks(text);
    return { count: pieces.length, stamped: false, pieces, text };
  }
  let src = text === '' ? '.' : text;
  if (src.length < count) {
    const parts: string[] = [];
    let len = 0;
    while (len < count) {
      parts.push(src);
      len += src.length + 1;
    }
    src = parts.join(' ');
  }
  // Slice on code points so a piece never splits a surrogate pair.
  const chars = /[^\x00-\x7f]/.test(src) ? Array.from(src) : null;
  const len = chars ? chars.length : src.length;
  const n = Math.min(count, len);
  const pieces: string[] = [];
  for (let i = 0; i < n; i++) {
    const a = Math.floor((i * len) / n);
    const b = Math.floor(((i + 1) * len) / n);
    pieces.push(chars ? chars.slice(a, b).join('') : src.slice(a, b));
  }
  // Code points can be fewer than code units: top up by repeating the last piece.
  while (pieces.length < count) pieces.push(pieces[pieces.length - 1]!);
  return { count, stamped: false, pieces, text: pieces.join('') };
}

/** `text` repeated, space-joined, and cut to `chars` UTF-16 code units (never inside a surrogate pair). */
export function lengthen(text: string, chars: number): string {
  const src = text === '' ? '.' : text;
  const whole = src.length >= chars ? src : `${src} `.repeat(Math.ceil(chars / (src.length + 1)));
  const cut = whole.slice(0, chars);
  return /[\ud800-\udbff]$/.test(cut) ? `${cut.slice(0, -1)}.` : cut;
}

function wordChunks(text: string): string[] {
  if (text === '') return [];
  const words = text.match(/\s*\S+\s*/g) ?? [text];
  const out: string[] = [];
  let pending = '';
  for (const w of words) {
    pending += w;
    if (pending.trim().length > 3) {
      out.push(pending);
      pending = '';
    }
  }
  if (pending) out.push(pending);
  return out;
}

/** Function-call arguments stream in at least two fragments (three for longer ones), like the real APIs. */
export function argFragments(args: string): string[] {
  if (args.length < 2) return [args];
  const n = args.length >= 12 ? 3 : 2;
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(args.slice(Math.floor((i * args.length) / n), Math.floor(((i + 1) * args.length) / n)));
  return out;
}
