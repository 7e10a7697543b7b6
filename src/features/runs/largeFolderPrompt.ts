// The large-folder question before a run's workspace sync (text and answers in core/runs/sync/largeFolders.ts).
import { showWarningMessage } from '../notify';
import { LARGE_FOLDER_CHOICES, largeFolderAnswer, largeFolderQuestion } from '../../core/runs/sync/largeFolders';
import type { LargeContentWarning } from '../../core/ssh/localManifest';
import type { LargeContentAnswer } from '../../core/ssh/sync';

export async function confirmLargeFolders(warnings: readonly LargeContentWarning[]): Promise<LargeContentAnswer> {
  const q = largeFolderQuestion(warnings);
  const choice = await showWarningMessage<string>(q.message, { modal: true, detail: q.detail }, LARGE_FOLDER_CHOICES.send, LARGE_FOLDER_CHOICES.exclude);
  return largeFolderAnswer(choice);
}
