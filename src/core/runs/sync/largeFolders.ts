// The question asked before a sync sends big data or checkpoint folders from the laptop: most often they
// belong on the host already (or in a bucket the host reads: s3://, gs://, hf://), and a first sync of tens
// of GB over a home uplink takes hours.
import type { LargeContentWarning } from '../../ssh/localManifest';
import type { LargeContentAnswer } from '../../ssh/sync';

export const LARGE_FOLDER_CHOICES = { send: 'Sync Anyway', exclude: 'Exclude These Folders' } as const;

function size(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${(bytes / 1e6).toFixed(0)} MB`;
}

export function largeFolderQuestion(warnings: readonly LargeContentWarning[]): { readonly message: string; readonly detail: string } {
  const total = warnings.reduce((a, w) => a + w.bytes, 0);
  const lines = warnings.map((w) => `${w.path}  ${size(w.bytes)} in ${w.files} file${w.files === 1 ? '' : 's'} (${w.reason === 'large' ? 'large' : w.reason})`);
  return {
    message: `The workspace holds ${size(total)} of data or checkpoints to send to the host.`,
    detail:
      `${lines.join('\n')}\n\nExcluding leaves them out of this sync (what an earlier sync sent stays on the host). ` +
      'For data that lives in a bucket, point data.train at an s3, gs or hf URI and the host fetches it; ' +
      '.finetuneignore keeps a folder out for good.',
  };
}

/** The button the person pressed, as the sync's answer; closing the dialog cancels. */
export function largeFolderAnswer(choice: string | undefined): LargeContentAnswer {
  if (choice === LARGE_FOLDER_CHOICES.send) return true;
  if (choice === LARGE_FOLDER_CHOICES.exclude) return 'exclude';
  return false;
}
