// Which service tools a completion gets (spec rules 3, 9 and 10).
import type { ProviderName } from '../providers/types.ts';
import type { ServiceTool } from '../tools/types.ts';

/** Only provider_a and provider_c run service tools. Unknown requested names are ignored. */
export function resolveToolNames(provider: ProviderName, requested: string[] | undefined, available: ServiceTool[]): string[] {
  return provider === 'provider_a' || provider === 'provider_c' ? storedToolNames(requested, available) : [];
}

/** A chat's stored enabledTools: unknown names dropped; omitted means every available tool. */
export function storedToolNames(requested: string[] | undefined, available: ServiceTool[]): string[] {
  const names = available.map((t) => t.name);
  return requested === undefined ? names : names.filter((n) => requested.includes(n));
}
