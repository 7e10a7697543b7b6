// Names the manifest and the code share (package.json contributes.walkthroughs and commands), kept free of
// `vscode` so the manifest test reads the same values.

export const WALKTHROUGH_COMMANDS = {
  openExample: 'remoteFinetune.openExample',
  openWalkthrough: 'remoteFinetune.openWalkthrough',
} as const;

/** contributes.walkthroughs[].id in package.json. */
export const WALKTHROUGH_ID = 'firstRun';
/** The example the walkthrough opens when the extension ships only one, and the first offered otherwise. */
export const FIRST_EXAMPLE = 'first-run';
