// Types of test/groups.mjs (plain JS: test/run.mjs runs before anything is compiled).
export declare const SOLO: string[];
export declare const GROUP_SIZE: number;
export declare function testName(file: string): string;
export declare function planProcesses(files: string[]): Array<{ name: string; members: string[] }>;
