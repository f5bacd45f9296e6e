/**
 * The VS Code glue: the `@oma` chat participant (./chat), commands, settings,
 * the status bar item, the output channel and the permission modal.
 * Everything with logic in it lives in ./core (no `vscode` import there, so it
 * is tested against the real host without an editor); this file only connects
 * it to the editor's UI. Replies appear in the Chat view; the one document a
 * reply becomes is the history export ("OMA: Show history", `@oma /history`).
 * "OMA: Choose model" picks the chat agent's model from its provider's list
 * (models/list); the choice is kept per agent in workspace state.
 *
 * The host is spawned by vscode-languageclient over stdio with the command
 * from `oma.host.command`, or the one ./core/hostCommand finds; its stderr and its state changes go to the
 * "oma-host" output channel, its state to the status bar; a crash restarts it
 * (RestartPolicy), after which agents are created anew. The language client
 * declares `workspace.applyEdit` and applies the host's `workspace/applyEdit`
 * through VS Code's WorkspaceEdit; the edited files are then saved, so the
 * agent's next read sees them.
 */

import * as vscode from 'vscode';
import { CancellationTokenSource } from 'vscode-jsonrpc';
import {
  CloseAction,
  type CloseHandlerResult,
  ErrorAction,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  ResponseError,
  State,
} from 'vscode-languageclient/node';

import { type ChatAgentPicker, type ChatHost, registerChatParticipant, showHistory } from './chat';
import { findHostCommand } from './core/hostCommand';
import { type Ask, imageBlock, isImagePath } from './core/input';
import { chooseModel, type ModelChoices, modelPickItems, withModelChoices } from './core/modelChoice';
import { MODEL_VENDOR, registerAgentModels } from './models';
import type { PermissionPrompt } from './core/permission';
import type { AgentConfig } from './core/protocol';
import { OmaSession, type RunHandle } from './core/session';
import {
  chatAgent,
  chooseAgent,
  initializationOptions,
  type OmaSettings,
  readSettings,
  RestartPolicy,
} from './core/settings';

let host: Host | undefined;
let chat: ChatAgentPicker | undefined;
/** Workspace state: the models chosen with "OMA: Choose model", per agent name. */
let workspaceState: vscode.Memento | undefined;
const MODEL_CHOICES_KEY = 'oma.modelChoices';

export function activate(context: vscode.ExtensionContext): void {
  workspaceState = context.workspaceState;
  const output = vscode.window.createOutputChannel('oma-host', { log: true });
  const status = new HostStatus(output);
  host = new Host(output, status);
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
  const chatHost: ChatHost = {
    settings,
    ready: () => host!.ready(),
    editorContext,
    track: (handle) => status.track(handle),
  };
  chat = registerChatParticipant(context, chatHost);
  registerAgentModels(context, chatHost);
  command('oma.openChat', openChatCommand);
  command('oma.ask', () => askInChat('ask'));
  command('oma.chat', () => askInChat('chat'));
  command('oma.askImage', askImageCommand);
  command('oma.runOnSelection', runOnSelectionCommand);
  command('oma.showHistory', showHistoryCommand);
  command('oma.reset', resetCommand);
  command('oma.chooseModel', chooseModelCommand);
  command('oma.cancel', async () => {
    const count = host?.session?.cancelAll() ?? 0;
    void vscode.window.setStatusBarMessage(
      count ? `oma: cancelling ${count} run(s)` : 'oma: nothing to cancel',
      3000,
    );
  });
  command('oma.restartHost', async () => host?.restart());
  command('oma.showOutput', async () => output.show(true));
  context.subscriptions.push(
    output,
    status,
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
  output.info('oma-host extension active; the host starts on first use');
}

export async function deactivate(): Promise<void> {
  await host?.stop();
  host = undefined;
}

/** The `oma.*` settings as written. */
function configuredSettings(): OmaSettings {
  const configuration = vscode.workspace.getConfiguration('oma');
  return readSettings((key) => configuration.get(key));
}

/** The settings the agents run with: the configured ones with the chosen models in place. */
function settings(): OmaSettings {
  return withModelChoices(configuredSettings(), modelChoices());
}

function modelChoices(): ModelChoices {
  return workspaceState?.get<ModelChoices>(MODEL_CHOICES_KEY) ?? {};
}

/** The host process and the session over it; started on first use. */
class Host {
  client: LanguageClient | undefined;
  session: OmaSession | undefined;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly status: HostStatus,
  ) {}

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
    const folders = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath);
    const cwd = folders[0];
    const program = findHostCommand(current.command, folders, process.env.PATH);
    this.output.info(`host command: ${program.command} (${program.how})`);
    const serverOptions: ServerOptions = {
      command: program.command,
      args: current.args,
      // No `transport`: TransportKind.stdio would append `--stdio` to the
      // arguments, which oma-host refuses; stdio is the default without it.
      options: cwd ? { cwd } : {},
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.output,
      initializationOptions: initializationOptions(current),
      middleware: {
        workspace: {
          handleApplyEdit: async (params, next) => {
            const answer = await next(params, new CancellationTokenSource().token);
            if (!(answer instanceof ResponseError) && answer.applied) {
              await saveEdited(params.edit.documentChanges ?? [], params.edit.changes ?? {});
            }
            this.output.info(`workspace/applyEdit "${params.label ?? ''}": ${JSON.stringify(answer)}`);
            return answer;
          },
        },
      },
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
    const session = new OmaSession(client, {
      permission: askPermission,
      clientName: 'vscode',
      // Read when an agent is created, so delegates are created as configured now.
      agentNamed: (name) => settings().agents.find((agent) => agent.name === name),
    });
    client.onDidChangeState((event) => {
      if (event.newState === State.Running) {
        session.forgetAgents(); // a (re)started host knows none of our agentIds
      }
      this.status.hostState(event.newState, client.initializeResult?.serverInfo, program.command);
    });
    this.client = client;
    this.session = session;
    void client.start().catch((error: unknown) => {
      this.output.error(`oma-host did not start: ${String(error)}`);
      this.status.failed(String(error));
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

/** "OMA: Ask agent" / "OMA: Chat with agent": the question goes to `@oma` in the Chat view. */
async function askInChat(kind: 'ask' | 'chat', image?: vscode.Uri): Promise<void> {
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  const context = await editorContext();
  const extras = [context.selection && 'the selection', (image ?? context.image) && 'the image'].filter(Boolean);
  const question = await vscode.window.showInputBox({
    prompt:
      `${kind === 'chat' ? 'Chat with' : 'Ask'} ${agent.name}` +
      (extras.length ? ` (with ${extras.join(' and ')})` : ''),
    ignoreFocusOut: true,
  });
  if (question === undefined) {
    return;
  }
  await openChat(kind, agent, question);
}

/**
 * Opens the Chat view with the agent's model selected (VS Code answers no chat
 * request without a model; see ./models) and sends `@oma /kind question`, or
 * only types `@oma ` when there is no question.
 */
async function openChat(kind: 'ask' | 'chat' | 'run', agent: AgentConfig, question?: string): Promise<void> {
  chat?.pick(agent.name); // the chat asks the agent the command picked, as `@oma /agent NAME` would
  const slash = kind === 'chat' ? '' : `/${kind} `;
  await vscode.commands.executeCommand('workbench.action.chat.open', {
    query: `@oma ${slash}${question ?? ''}`,
    isPartialQuery: question === undefined,
    modelSelector: { vendor: MODEL_VENDOR, id: agent.name },
  });
}

/** "OMA: Open chat": the Chat view, ready for `@oma`, with the agent's model selected. */
async function openChatCommand(): Promise<void> {
  const agent = await pickAgent();
  if (agent !== undefined) {
    await openChat('chat', agent);
  }
}


async function askImageCommand(): Promise<void> {
  const files = await vscode.window.showOpenDialog({
    canSelectMany: false,
    openLabel: 'Ask about this image',
    filters: { Images: ['png', 'jpg', 'jpeg', 'gif', 'webp'] },
  });
  const file = files?.[0];
  if (file === undefined) {
    return;
  }
  // The chat sends the image in the active tab along: open it there, then ask.
  await vscode.commands.executeCommand('vscode.open', file);
  await askInChat('ask', file);
}

async function runOnSelectionCommand(): Promise<void> {
  const context = await editorContext();
  if (context.selection === undefined) {
    throw new Error('select some text first: it becomes the run input');
  }
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  await openChat('run', agent, '');
}

async function showHistoryCommand(): Promise<void> {
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  await showHistory(await host!.ready(), agent);
}

async function resetCommand(): Promise<void> {
  const agent = await pickAgent();
  if (agent === undefined) {
    return;
  }
  await (await host!.ready()).reset(agent);
  void vscode.window.setStatusBarMessage(`oma: ${agent.name}'s conversation was reset`, 3000);
}

/**
 * "OMA: Choose model": the chat agent's provider's models (models/list) in a
 * QuickPick; the choice is kept in workspace state and the agent continues
 * its conversation with it (recreated with its history).
 */
async function chooseModelCommand(): Promise<void> {
  const configured = chatAgent(configuredSettings(), chat?.picked());
  const agent = chatAgent(settings(), configured.name);
  const session = await host!.ready();
  const models = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: `oma: listing ${agent.provider ?? 'the provider'}'s models` },
    () => session.models(agent),
  );
  if (models.length === 0) {
    throw new Error(`the provider of ${agent.name} lists no models`);
  }
  const picked = await vscode.window.showQuickPick(modelPickItems(models, agent.model ?? undefined), {
    placeHolder: `Model for ${agent.name} (now ${agent.model ?? 'the host default'})`,
    matchOnDescription: true,
  });
  if (picked === undefined || picked.model === agent.model) {
    return;
  }
  await session.switchModel(agent, picked.model);
  await workspaceState?.update(MODEL_CHOICES_KEY, chooseModel(modelChoices(), configured, picked.model));
  void vscode.window.setStatusBarMessage(`oma: ${agent.name} uses ${picked.model} from now on`, 3000);
}

/** Saves the documents an applied workspace/applyEdit changed, so the agent reads what it wrote. */
async function saveEdited(
  documentChanges: readonly unknown[],
  changes: Readonly<Record<string, unknown>>,
): Promise<void> {
  const uris = new Set(Object.keys(changes));
  for (const change of documentChanges) {
    const uri = (change as { textDocument?: { uri?: unknown } }).textDocument?.uri;
    if (typeof uri === 'string') {
      uris.add(uri);
    }
  }
  for (const uri of uris) {
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === vscode.Uri.parse(uri).toString());
    await document?.save();
  }
}

/** The host's state in the status bar ("oma: ready", "oma: 1 running"); a click shows the output. */
class HostStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('oma.status', vscode.StatusBarAlignment.Left, 10);
  private state = 'not started';
  private readonly running = new Set<RunHandle>();

  constructor(private readonly output: vscode.LogOutputChannel) {
    this.item.name = 'oma-host';
    this.item.command = 'oma.showOutput';
    this.render('$(hubot) oma', 'oma-host: not started (it starts on first use)');
    this.item.show();
  }

  hostState(state: State, serverInfo: { name: string; version?: string } | undefined, command: string): void {
    if (state === State.Starting) {
      this.state = 'starting';
      this.output.info(`starting ${command}`);
    } else if (state === State.Running) {
      this.state = 'ready';
      const server = serverInfo ? `${serverInfo.name} ${serverInfo.version ?? ''}`.trim() : command;
      this.output.info(`${server} is ready`);
    } else {
      this.state = 'stopped';
      this.output.warn('oma-host stopped');
    }
    this.update();
  }

  failed(why: string): void {
    this.state = 'failed';
    this.render('$(error) oma: failed', `oma-host did not start: ${why}`);
  }

  track(handle: RunHandle): void {
    this.running.add(handle);
    this.update();
    void handle.outcome.then(() => {
      this.running.delete(handle);
      this.update();
    });
  }

  private update(): void {
    if (this.state === 'failed') {
      return;
    }
    const runs = this.running.size;
    const icon = runs > 0 || this.state === 'starting' ? '$(sync~spin)' : this.state === 'ready' ? '$(hubot)' : '$(debug-disconnect)';
    const text = runs > 0 ? `${runs} running` : this.state;
    this.render(`${icon} oma: ${text}`, `oma-host: ${this.state}${runs ? `, ${runs} run(s) in flight` : ''}`);
  }

  private render(text: string, tooltip: string): void {
    this.item.text = text;
    this.item.tooltip = tooltip;
  }

  dispose(): void {
    this.item.dispose();
  }
}
