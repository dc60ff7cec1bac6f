// The request bodies of the bench's streams: each asks the simulator for `deltas` stamped deltas at
// `rate` per second (`__I__` becomes the stream's index, so no two requests are the same).
const simLine = (deltas: number, rate: number) => `SIM ${JSON.stringify({ deltas, rate, stamp: true })}`;

/** Chat Completions, straight to the simulator or through a relay (the floor, nginx, the peer). */
export const ccBody = (deltas: number, rate: number) =>
  JSON.stringify({ model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: `load __I__\n${simLine(deltas, rate)}` }] });

/** The service's stream endpoint, text only (`enabledTools: []`: no round's text is held to look for tool calls). */
export const serviceBody = (provider: string, persist: boolean, deltas: number, rate: number) =>
  JSON.stringify({ provider, model: 'm', persist, enabledTools: [], messages: [{ role: 'user', content: `load __I__\n${simLine(deltas, rate)}` }] });

const SIM_ASK = /SIM \{\\"deltas\\":\d+,\\"rate\\":\d+/;

/** The same body asking the simulator for `deltas` at `rate` (the warm-ups); null when it asks for no stamped stream. */
export function withDeltas(body: string, deltas: number, rate: number): string | null {
  return SIM_ASK.test(body) ? body.replace(SIM_ASK, `SIM {\\"deltas\\":${deltas},\\"rate\\":${rate}`) : null;
}
