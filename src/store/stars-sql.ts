// Starring, as the queries of every listed item see it: the reserved project and the join that gives
// an item its `starred_at`.

export type ItemType = 'chat' | 'search';

/** The reserved project whose members are the starred items. */
export const STARRED_PROJECT = 'starred';

/** LEFT JOIN giving `starred_at` for the item aliased `item` (one index probe on the primary key). */
export function starJoin(type: ItemType, item: string): string {
  return `LEFT JOIN project_members star ON star.project_id = '${STARRED_PROJECT}'
            AND star.item_type = '${type}' AND star.item_id = ${item}.id`;
}
