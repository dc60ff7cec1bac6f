// web_search: ranked results from the engine chosen by CHAT_WEB_SEARCH_ENGINE, as compact text for the model.
import type { Config } from '../base/config.ts';
import { engineAEndpointFromConfig, engineASearch } from '../engines/engine-a.ts';
import { engineBSearch } from '../engines/engine-b.ts';
import { EngineError } from '../engines/errors.ts';
import type { SearchResultItem } from '../base/types.ts';
import { capText, optionalInt, previewOf, requireString } from './args.ts';
import { ToolError, type ServiceTool, type ToolContext } from './types.ts';
import { sliceUnits } from '../base/text.ts';

const DEFAULT_RESULTS = 8;
const MAX_RESULTS = 20;
const PER_FIELD_CHARS = 700;
const OUTPUT_CHARS = 24_000;
/** A hung engine must not hold the model's round for the run's whole lifetime. */
const SEARCH_TIMEOUT_MS = 30_000;

function clip(text: string, max = PER_FIELD_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${sliceUnits(flat, max)}…` : flat;
}

export function formatResults(query: string, engine: string, results: SearchResultItem[]): string {
  if (results.length === 0) return `No results for "${query}" (${engine}).`;
  const lines = [`Web search results for "${query}" (${engine}, ${results.length} results):`];
  results.forEach((r, i) => {
    lines.push('', `${i + 1}. ${r.title ? clip(r.title, 200) : '(untitled)'}`, `   URL: ${r.url}`);
    if (r.publishedDate) lines.push(`   Published: ${r.publishedDate.slice(0, 10)}`);
    if (r.summary) lines.push(`   Summary: ${clip(r.summary)}`);
    // A snippet that merely repeats the summary would only cost tokens.
    if (r.snippet && r.snippet !== r.summary) lines.push(`   Snippet: ${clip(r.snippet)}`);
  });
  return capText(lines.join('\n'), OUTPUT_CHARS, 'search results');
}

async function search(config: Config, query: string, numResults: number, signal: AbortSignal) {
  const req = { signal, timeoutMs: SEARCH_TIMEOUT_MS };
  if (config.CHAT_WEB_SEARCH_ENGINE === 'engine_b') {
    if (!config.CHAT_ENGINE_B_BASE_URL) {
      throw new ToolError('web_search is not configured: CHAT_WEB_SEARCH_ENGINE=engine_b needs CHAT_ENGINE_B_BASE_URL');
    }
    return (await engineBSearch({ baseUrl: config.CHAT_ENGINE_B_BASE_URL, query, numResults }, req)).results;
  }
  const endpoint = engineAEndpointFromConfig(config);
  if ('missing' in endpoint) {
    throw new ToolError(`web_search is not configured: engine_a needs ${endpoint.missing.join(' and ')}`);
  }
  const res = await engineASearch(
    {
      ...endpoint,
      query,
      type: 'auto',
      numResults,
      // Highlights are the snippet; a query-focused summary is what makes a result useful without a fetch.
      contents: { highlights: { maxCharacters: 500 }, summary: { query } },
    },
    req,
  );
  return res.results;
}

export const webSearchTool: ServiceTool = {
  name: 'web_search',
  description:
    'Searches the web and returns ranked results (title, URL, date, and a summary or snippet for each). ' +
    'Use it for current events, facts you are unsure of, documentation, or to find pages worth reading; ' +
    'then call fetch_url on the most relevant URLs for full text. Write focused queries with key terms.',
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'The search query.' },
      numResults: {
        type: 'integer',
        description: `How many results to return (1-${MAX_RESULTS}, default ${DEFAULT_RESULTS}).`,
        minimum: 1,
        maximum: MAX_RESULTS,
      },
    },
    required: ['query'],
    additionalProperties: false,
  },
  summarize(args) {
    return `Searching the web for "${typeof args.query === 'string' ? previewOf(args.query, 100) : ''}"`;
  },
  async run(args, ctx: ToolContext) {
    const query = requireString('web_search', args, 'query').trim();
    const numResults = optionalInt('web_search', args, 'numResults', {
      min: 1,
      max: MAX_RESULTS,
      fallback: DEFAULT_RESULTS,
    });
    const engine = ctx.config.CHAT_WEB_SEARCH_ENGINE;
    try {
      const results = await search(ctx.config, query, numResults, ctx.signal);
      return {
        output: formatResults(query, engine, results),
        preview: results.length ? `${results.length} results: ${results.slice(0, 3).map((r) => r.url).join(', ')}` : 'no results',
      };
    } catch (err) {
      if (err instanceof EngineError) throw new ToolError(`web search failed: ${err.message}`, { cause: err });
      throw err;
    }
  },
};
