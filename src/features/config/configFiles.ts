// File access for the checks inside the editor: open documents win over the disk, so a referenced
// accelerate config that is being edited is checked as it is on screen. Reads stay inside the workspace.
import * as vscode from 'vscode';
import type { FileAccess } from '../../core/config/types';
import { localFiles } from '../../core/config/nodeFiles';
import { dirName } from '../../core/pathText';

/** Where the checks of `fileName` may read: the workspace folders, or the file's own folder when there are none. */
export function checkRoots(fileName: string): string[] {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  return folders.length > 0 ? folders : [dirName(fileName)];
}

export function editorFiles(fileName: string): FileAccess {
  const disk = localFiles(checkRoots(fileName));
  const open = (p: string): vscode.TextDocument | undefined => vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === p);
  return {
    // The disk read decides first (inside the workspace, a regular file); an open document then supplies the text on screen.
    read: (p) => {
      const onDisk = disk.read(p);
      const doc = 'refused' in onDisk ? undefined : open(p);
      return doc ? { text: doc.getText() } : onDisk;
    },
    exists: (p) => open(p) !== undefined || disk.exists(p),
    isTrackedByGit: (p) => disk.isTrackedByGit?.(p),
  };
}
