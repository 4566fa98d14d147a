// Read-only markdown documents for the doctor report and the recall preview (a virtual `memory-ls:` scheme).
import * as vscode from 'vscode';

export const REPORT_SCHEME = 'memory-ls';

export class ReportDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.path) ?? '';
  }

  /** Show `text` as the read-only markdown document `memory-ls:/<name>.md`. */
  async show(name: string, text: string): Promise<vscode.TextEditor> {
    const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${name}.md` });
    this.contents.set(uri.path, text);
    this.emitter.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    if (document.languageId !== 'markdown') {
      await vscode.languages.setTextDocumentLanguage(document, 'markdown');
    }
    return vscode.window.showTextDocument(document, { preview: false });
  }

  dispose(): void {
    this.emitter.dispose();
  }
}
