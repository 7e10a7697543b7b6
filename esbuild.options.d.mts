import type { BuildOptions, Plugin } from 'esbuild';
export declare const lazyVendors: Record<string, string>;
export declare const lazyExternal: Plugin;
export declare function nodeCommon(production: boolean): BuildOptions;
export declare function vendorBuild(production: boolean, outdir: string): BuildOptions;
