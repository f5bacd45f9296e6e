/**
 * The VS Code glue: commands, settings, the reply document, progress and the
 * permission modal. Everything with logic in it lives in ./core (no `vscode`
 * import there, so it is tested against the real host without an editor);
 * this file only connects it to the editor's UI.
 *
 * The host is spawned by vscode-languageclient over stdio with the command
 * from `oma.host.command`; its stderr goes to the "oma-host" output channel;
 * a crash restarts it (RestartPolicy), after which agents are created anew.
 */

import * as vscode from 'vscode';
import {
  CloseAction,
  type CloseHandlerResult,
  ErrorAction,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

import { describeFailure } from './core/errors';
import { type Ask, imageBlock, isImagePath } from './core/input';
import type { PermissionPrompt } from './core/permission';
import type { AgentConfig, ContentBlock, WorkDoneValue } from './core/protocol';
import { askHeading, renderHistory } from './core/render';
import { OmaSession, type RunHandle, type RunObserver } from './core/session';
import {
  chooseAgent,
  initializationOptions,
  type OmaSettings,
  readSettings,
  RestartPolicy,
} from './core/settings';

let host: Host | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('oma-host', { log: true });
  const replies = new ReplyDocument();
  host = new Host(output);
  const command = (name: string, run: () => Promise<void>): void => {
    context.subscriptions.push(
      vscode.commands.registerCommand(name, async () => {
        try {
          await run();
        } catch (error) {
          void vscode.window.showErrorMessage(
            `oma: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }),
    );
  };
  command('oma.ask', () => askCommand('ask', replies));
  command('oma.chat', () => askCommand('chat', replies));
  command('oma.askImage', () => askImageCommand(replies));
  command('oma.runOnSelection', () => runOnSelectionCommand(replies));
  command('oma.showHistory', showHistoryCommand);
  command('oma.reset', resetCommand);
  command('oma.cancel', async () => {
    const count = host?.session?.cancelAll() ?? 0;
    void vscode.window.setStatusBarMessage(
      count ? `oma: cancelling ${count} run(s)` : 'oma: nothing to cancel',
      3000,
    );
  });
  command('oma.restartHost', async () => host?.restart());
  context.subscriptions.push(
    output,
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('oma.host') || event.affectsConfiguration('oma.stateDir')) {
        if (host?.client !== undefined) {
          await host.restart(); // a host not started yet reads the settings when it starts
        }
      } else if (event.affectsConfiguration('oma.agents')) {
        await host?.session?.disposeAgents();
      }
    }),
  );
}

export async function deactivate(): Promise<void> {
  await host?.stop();
  host = undefined;
}

function settings(): OmaSettings {
  const configuration = vscode.workspace.getConfiguration('oma');
  return readSettings((key) => configuration.get(key));
}

/** The host process and the session over it; started on first use. */
class Host {
  client: LanguageClient | undefined;
  session: OmaSession | undefined;

  constructor(private readonly output: vscode.LogOutputChannel) {}

  async ready(): Promise<OmaSession> {
    const state = this.client?.state;
    if (state === State.Stopped || state === State.StartFailed) {
      // It failed to start, or crashed too often to be restarted: a command tries again.
      await this.stop();
    }
    if (this.session === undefined) {
      this.start(settings());
    }
    return this.session as OmaSession;
  }

  private start(current: OmaSettings): void {
    const policy = new RestartPolicy();
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const serverOptions: ServerOptions = {
      command: current.command,
      args: current.args,
      transport: TransportKind.stdio,
      options: cwd ? { cwd } : {},
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.output,
      initializationOptions: initializationOptions(current),
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: (): CloseHandlerResult =>
          policy.shouldRestart(Date.now())
            ? { action: CloseAction.Restart, message: 'oma-host exited; restarting it' }
            : {
                action: CloseAction.DoNotRestart,
                message: `${policy.describe()}; not restarting (see the oma-host output)`,
              },
      },
    };
    const client = new LanguageClient('oma-host', 'oma-host', serverOptions, clientOptions);
    const session = new OmaSession(client, { permission: askPermission, clientName: 'vscode' });
    client.onDidChangeState((event) => {
      if (event.newState === State.Running) {
        session.forgetAgents(); // a (re)started host knows none of our agentIds
      }
    });
    this.client = client;
    this.session = session;
    void client.start().catch((error: unknown) => {
      this.output.error(`oma-host did not start: ${String(error)}`);
      this.output.show(true);
    });
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.session?.dispose();
    this.client = undefined;
    this.session = undefined;
    if (client !== undefined && client.needsStop()) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    this.start(settings());
  }
}

async function askPermission(prompt: PermissionPrompt): Promise<string | undefined> {
  return vscode.window.showWarningMessage(
    prompt.message,
    { modal: true, detail: prompt.detail },
    ...prompt.choices.map((choice) => choice.label),
  );
}

async function pickAgent(): Promise<AgentConfig | undefined> {
  const current = settings();
  const chosen = chooseAgent(current);
  if (chosen !== undefined) {
    return chosen;
  }
  const picked = await vscode.window.showQuickPick(
    current.agents.map((agent) => ({
      label: agent.name,
      description: agent.backend?.kind ?? agent.model ?? '',
      agent,
    })),
    { placeHolder: 'Which agent?' },
  );
  return picked?.agent;
}

/** The active editor's selection, and the active file when it is an image. */
async function editorContext(): Promise<Pick<Ask, 'selection' | 'image'>> {
  const editor = vscode.window.activeTextEditor;
  const context: Pick<Ask, 'selection' | 'image'> = {};
  if (editor && !editor.selection.isEmpty) {
    context.selection = {
      text: editor.document.getText(editor.selection),
      fileName: vscode.workspace.asRelativePath(editor.document.uri),
      languageId: editor.document.languageId,
    };
  }
  // An image opens in a custom editor, not a text editor: look at the active tab.
  const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
  const input = tab?.input;
  if (input instanceof vscode.TabInputCustom || input instanceof vscode.TabInputText) {
    if (isImagePath(input.uri.path)) {
      context.image = imageBlock(input.uri.path, await vscode.workspace.fs.readFile(input.uri));
    }
  }
  return context;
}

async function askCommand(kind: 'ask' | 'chat', replies: ReplyDocument): Promise<void> {
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  const context = await editorContext();
  const extras = [context.selection && 'the selection', context.image && 'the image'].filter(Boolean);
  const question = await vscode.window.showInputBox({
    prompt:
      `${kind === 'chat' ? 'Chat with' : 'Ask'} ${agent.name}` +
      (extras.length ? ` (with ${extras.join(' and ')})` : ''),
    ignoreFocusOut: true,
  });
  if (question === undefined) {
    return;
  }
  await runAndShow(kind, agent, { question, ...context }, replies);
}

async function askImageCommand(replies: ReplyDocument): Promise<void> {
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  const files = await vscode.window.showOpenDialog({
    canSelectMany: false,
    openLabel: 'Ask about this image',
    filters: { Images: ['png', 'jpg', 'jpeg', 'gif', 'webp'] },
  });
  const file = files?.[0];
  if (file === undefined) {
    return;
  }
  const question = await vscode.window.showInputBox({
    prompt: `Question about ${file.path.split('/').pop()}`,
    ignoreFocusOut: true,
  });
  if (question === undefined) {
    return;
  }
  const image = imageBlock(file.path, await vscode.workspace.fs.readFile(file));
  await runAndShow('ask', agent, { question, image }, replies);
}

async function runOnSelectionCommand(replies: ReplyDocument): Promise<void> {
  const agent = await pickAgent();
  const context = await editorContext();
  if (agent === undefined) {
    return;
  }
  if (context.selection === undefined) {
    throw new Error('select some text first: it becomes the run input');
  }
  await runAndShow('run', agent, { question: '', selection: context.selection }, replies);
}

async function runAndShow(
  kind: 'ask' | 'chat' | 'run',
  agent: AgentConfig,
  ask: Ask,
  replies: ReplyDocument,
): Promise<void> {
  const session = await host!.ready();
  const shown: ContentBlock[] = [{ type: 'text', text: ask.question }];
  if (ask.selection) {
    shown.push({ type: 'text', text: `[selection from ${ask.selection.fileName ?? 'the editor'}]` });
  }
  if (ask.image) {
    shown.push(ask.image);
  }
  replies.append(askHeading(kind, agent.name, shown));
  let handle: RunHandle | undefined;
  const progress = new WorkDoneNotification(() => handle?.cancel());
  const observer: RunObserver = {
    onText: (delta) => replies.append(delta),
    onWorkDone: (value) => progress.update(value),
    onRunProgress: (event) =>
      void vscode.window.setStatusBarMessage(`oma: ${event.agent} ${event.type}`, 3000),
  };
  handle =
    kind === 'chat'
      ? session.chat(agent, ask, observer)
      : kind === 'run'
        ? session.runOnce(agent, ask, observer)
        : session.ask(agent, ask, observer);
  const outcome = await handle.outcome;
  progress.close();
  replies.append('\n');
  if (outcome.kind === 'error') {
    void vscode.window.showErrorMessage(`oma: ${outcome.message}`);
  } else if (outcome.kind === 'done' && !outcome.result.success) {
    void vscode.window.showWarningMessage(`oma: ${describeFailure(outcome.result)}`);
  }
}

async function showHistoryCommand(): Promise<void> {
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  const messages = await (await host!.ready()).history(agent);
  const document = await vscode.workspace.openTextDocument({
    language: 'markdown',
    content: renderHistory(agent.name, messages),
  });
  await vscode.window.showTextDocument(document, { preview: true });
}

async function resetCommand(): Promise<void> {
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  await (await host!.ready()).reset(agent);
  void vscode.window.setStatusBarMessage(`oma: ${agent.name}'s conversation was reset`, 3000);
}

/** The host's work-done progress (begin → report… → end) as a cancellable
 *  notification whose message follows the host's ("waiting for …", "calling tool grep"). */
class WorkDoneNotification {
  private opened = false;
  private closed = false;
  private finish: () => void = () => undefined;
  private readonly ended = new Promise<void>((resolve) => (this.finish = resolve));
  private show: (message: string) => void = () => undefined;

  constructor(private readonly cancel: () => void) {}

  update(value: WorkDoneValue): void {
    if (value.kind === 'begin' && !this.opened && !this.closed) {
      this.opened = true;
      void vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `oma: ${value.title}`, cancellable: true },
        (progress, token) => {
          token.onCancellationRequested(this.cancel);
          this.show = (message) => progress.report({ message });
          this.show(value.message ?? 'running…');
          return this.ended;
        },
      );
    } else if (value.kind === 'report' && value.message !== undefined) {
      this.show(value.message);
    } else if (value.kind === 'end') {
      this.close();
    }
  }

  /** Idempotent; a `begin` that arrives after this opens nothing. */
  close(): void {
    this.closed = true;
    this.finish();
  }
}

/** An untitled markdown document that replies are appended to, in order. */
class ReplyDocument {
  private document: vscode.TextDocument | undefined;
  private queue: Promise<void> = Promise.resolve();

  append(text: string): void {
    if (text === '') {
      return;
    }
    this.queue = this.queue
      .then(() => this.write(text))
      .catch((error: unknown) => {
        void vscode.window.showErrorMessage(`oma: could not write the reply: ${String(error)}`);
      });
  }

  private async write(text: string): Promise<void> {
    if (this.document === undefined || this.document.isClosed) {
      this.document = await vscode.workspace.openTextDocument({ language: 'markdown', content: '' });
      await vscode.window.showTextDocument(this.document, {
        viewColumn: vscode.ViewColumn.Beside,
        preserveFocus: true,
        preview: false,
      });
    }
    const document = this.document;
    const edit = new vscode.WorkspaceEdit();
    edit.insert(document.uri, document.positionAt(document.getText().length), text);
    await vscode.workspace.applyEdit(edit);
  }
}
