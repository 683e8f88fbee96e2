// The onnxtext extension: a language client for `onnxtext lsp`, and binary .onnx models edited as text.
//
// * The server runs as `<python> -m onnxtext lsp` (setting onnxtext.pythonPath). When that Python has no
//   onnxtext language server (or onnxtext.server.enabled is false) the extension stays grammar-only:
//   highlighting, snippets and brackets come from package.json's contributions and need no server.
// * Opening a .onnx file (a custom editor for *.onnx that hands over at once), or "Open as onnxtext" on it,
//   opens `onnxtext-binary:/path/model.onnx.onnxtext`, a file system
//   provider backed by the server: reading asks `onnxtext/print` for the model's text; saving asks
//   `onnxtext/compile`, which writes the binary model atomically or refuses a text with errors (the save
//   then fails with the server's reason and the .onnx file is unchanged).

import * as cp from "child_process";
import * as fs from "fs";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

const SCHEME = "onnxtext-binary";
const SUFFIX = ".onnxtext";
let client: LanguageClient | undefined;
let output: vscode.OutputChannel;

function python(): string {
  const configured = vscode.workspace.getConfiguration("onnxtext").get<string>("pythonPath", "");
  return configured || (process.platform === "win32" ? "python" : "python3");
}

function settings() {
  const c = vscode.workspace.getConfiguration("onnxtext");
  return { width: c.get("width", 100), lintLevel: c.get("lintLevel", "warning"), strict: c.get("strict", false) };
}

/** Whether `python` can import the language server (pygls installed, onnxtext new enough). */
function serverAvailable(py: string): string | undefined {
  const probe = cp.spawnSync(py, ["-c", "import onnxtext.lsp.server"], { encoding: "utf8", timeout: 30000 });
  if (probe.error) {
    return `${py}: ${probe.error.message}`;
  }
  if (probe.status !== 0) {
    const lines = (probe.stderr || "").trim().split("\n");
    return lines[lines.length - 1] || `exit status ${probe.status}`;
  }
  return undefined;
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  if (!vscode.workspace.getConfiguration("onnxtext").get("server.enabled", true)) {
    output.appendLine("onnxtext.server.enabled is false: highlighting and snippets only");
    return;
  }
  const py = python();
  const problem = serverAvailable(py);
  if (problem !== undefined) {
    output.appendLine(`no onnxtext language server (${problem}); highlighting and snippets only`);
    vscode.window.showInformationMessage(
      `onnxtext: the language server is not available from ${py} (pip install 'onnxtext[lsp]', or set ` +
        `onnxtext.pythonPath); highlighting and snippets still work.`);
    return;
  }
  const serverOptions: ServerOptions = { command: py, args: ["-m", "onnxtext", "lsp"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { language: "onnxtext", scheme: "file" },
      { language: "onnxtext", scheme: "untitled" },
      { language: "onnxtext", scheme: SCHEME },
    ],
    initializationOptions: { onnxtext: settings() },
    synchronize: { configurationSection: "onnxtext" },
    outputChannel: output,
  };
  client = new LanguageClient("onnxtext", "onnxtext language server", serverOptions, clientOptions);
  await client.start();
  context.subscriptions.push({ dispose: () => client?.stop() });
}

/** The .onnx file behind an `onnxtext-binary:` URI. */
function modelUri(uri: vscode.Uri): vscode.Uri {
  const path = uri.path.endsWith(SUFFIX) ? uri.path.slice(0, -SUFFIX.length) : uri.path;
  return vscode.Uri.file(path);
}

class BinaryModelFileSystem implements vscode.FileSystemProvider {
  private emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const st = fs.statSync(modelUri(uri).fsPath);
    return { type: vscode.FileType.File, ctime: st.ctimeMs, mtime: st.mtimeMs, size: st.size };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const result = await server().sendRequest<{ text: string }>("onnxtext/print", { uri: modelUri(uri).toString() });
    return Buffer.from(result.text, "utf8");
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const text = Buffer.from(content).toString("utf8");
    const result = await server().sendRequest<{ ok: boolean; written: boolean; message: string }>(
      "onnxtext/compile", { uri: modelUri(uri).toString(), text });
    if (!result.ok) {
      throw vscode.FileSystemError.NoPermissions(result.message);
    }
    this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }
  createDirectory(): void {
    throw vscode.FileSystemError.NoPermissions("onnxtext-binary: no directories");
  }
  delete(): void {
    throw vscode.FileSystemError.NoPermissions("onnxtext-binary: delete the .onnx file itself");
  }
  rename(): void {
    throw vscode.FileSystemError.NoPermissions("onnxtext-binary: rename the .onnx file itself");
  }
}

function server(): LanguageClient {
  if (client === undefined) {
    throw vscode.FileSystemError.Unavailable(
      "the onnxtext language server is not running (pip install 'onnxtext[lsp]', or set onnxtext.pythonPath)");
  }
  return client;
}

async function openAsText(target?: vscode.Uri): Promise<void> {
  const uri = target ?? vscode.window.activeTextEditor?.document.uri;
  if (uri === undefined || uri.scheme !== "file") {
    vscode.window.showWarningMessage("onnxtext: choose a .onnx file to open as text");
    return;
  }
  const doc = await vscode.workspace.openTextDocument(uri.with({ scheme: SCHEME, path: uri.path + SUFFIX }));
  await vscode.window.showTextDocument(doc);
}

/** Opening a .onnx file (double click): hand it to the text view, and close this placeholder editor. */
class BinaryModelOpener implements vscode.CustomReadonlyEditorProvider {
  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    if (client === undefined) {
      panel.webview.html = "<p>The onnxtext language server is not running, so this model cannot be shown as " +
        "text (pip install 'onnxtext[lsp]', or set onnxtext.pythonPath). Use <b>Reopen Editor With...</b> " +
        "for another editor.</p>";
      return;
    }
    panel.webview.html = "<p>Opening the model as onnxtext...</p>";
    try {
      await openAsText(document.uri);
      panel.dispose();
    } catch (e) {
      panel.webview.html = `<p>onnxtext could not show this model: ${String(e)}</p>`;
    }
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("onnxtext");
  context.subscriptions.push(
    output,
    vscode.workspace.registerFileSystemProvider(SCHEME, new BinaryModelFileSystem(), { isCaseSensitive: true }),
    vscode.commands.registerCommand("onnxtext.openAsText", openAsText),
    vscode.window.registerCustomEditorProvider("onnxtext.binaryModel", new BinaryModelOpener()),
    vscode.commands.registerCommand("onnxtext.restartServer", async () => {
      await client?.stop();
      client = undefined;
      await startClient(context);
    }),
  );
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
