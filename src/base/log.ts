import pino, { type Logger } from 'pino';
import { activeTraceId } from '../telemetry/tracing.ts';

const NO_FIELDS = Object.freeze({});

/** With tracing on, a line logged while a span is active (a request, a run's work) carries its trace id. */
function traceFields(): object {
  const traceId = activeTraceId();
  return traceId === undefined ? NO_FIELDS : { trace_id: traceId };
}

/** pino's default merges the line's fields into the mixin's object: the shared empty one is left alone. */
function mergeTraceFields(fields: object, trace: object): object {
  return trace === NO_FIELDS ? fields : Object.assign(trace, fields);
}

/** `destination`: where lines go (stdout when absent). */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options = { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime, mixin: traceFields, mixinMergeStrategy: mergeTraceFields };
  return destination === undefined ? pino(options) : pino(options, destination);
}
