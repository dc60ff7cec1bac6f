// What a thread saw of one provider call, for the GenAI metrics (genai-metrics.ts, otlp-metrics.ts).

/** One provider call, as the thread that made it saw it. */
export interface GenAiObservation {
  provider: string;
  model: string;
  /** The whole call, request to last byte. */
  seconds: number;
  /** Request to the first text (a round that sent none: null). */
  firstChunkSeconds: number | null;
  /** null: the provider reported no usage (or the call failed). */
  inputTokens: number | null;
  outputTokens: number | null;
  /** The failure's class (`ProviderError`, `AbortError`…); absent when the call succeeded. */
  errorType?: string;
}
