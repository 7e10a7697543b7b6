import type { BuildOptions, Plugin } from 'esbuild';
export interface LazyVendor {
  /** The module the vendor bundle is built from. */
  readonly entry: string;
  /** The import specifiers source code reaches it by. */
  readonly imports: readonly string[];
}
export declare const lazyVendors: { readonly ssh2: LazyVendor } & Readonly<Record<string, LazyVendor>>;
export declare const lazyExternal: Plugin;
export declare function nodeCommon(production: boolean): BuildOptions;
export declare function vendorBuild(production: boolean, outdir: string): BuildOptions;
