// The two provider SDKs, loaded through Node's CommonJS loader on first use; every value the service
// takes from them (the client classes, the error classes it tests with instanceof) comes from here, so
// there is one copy of each class in a thread.
//
// Why on first use: together they are ~400 CommonJS modules (the Anthropic SDK brings @opentelemetry/api),
// ~0.3 s of CPU in every thread that loads them, and the service starts a main thread plus one per
// ACTOR_THREADS. A thread now pays only for the SDK of the first provider it calls, when it calls it:
// a service start, or an actor thread that never runs a provider_b call, loads neither or one.
// Why require, not import: the packages ship both builds with the same API and types, and an ESM import
// of hundreds of files cost ~3 × the CPU of require under tsx (Node 20).
import { createRequire } from 'node:module';
import type * as AnthropicSdk from '@anthropic-ai/sdk';
import type * as OpenAISdk from 'openai';

const require = createRequire(import.meta.url);

let anthropic: typeof AnthropicSdk | undefined;
let openai: typeof OpenAISdk | undefined;

/** `@anthropic-ai/sdk`'s exports: `.default` is the client, `.APIError` and the rest its errors. */
export const anthropicSdk = (): typeof AnthropicSdk => (anthropic ??= require('@anthropic-ai/sdk') as typeof AnthropicSdk);
/** `openai`'s exports: `.default` is the client, `.APIError` and the rest its errors. */
export const openaiSdk = (): typeof OpenAISdk => (openai ??= require('openai') as typeof OpenAISdk);

type ErrorClass = 'APIError' | 'APIUserAbortError' | 'APIConnectionError' | 'APIConnectionTimeoutError';

/**
 * Whether `err` is an instance of either SDK's error class of that name. Only SDKs already loaded are
 * asked (an error can only come from a loaded one), so the check never loads an SDK.
 */
export function isSdkError(err: unknown, name: ErrorClass): boolean {
  return (openai !== undefined && err instanceof openai[name]) || (anthropic !== undefined && err instanceof anthropic[name]);
}

/** A value made on first call and kept: a provider's SDK client, built when the provider is first called. */
export function onFirstUse<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
