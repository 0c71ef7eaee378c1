/** Other services' data exports as export lines (domain/export-format.ts), for `POST /import?from=…`. */
import { badInput } from '../errors.js';
import { chatgptConversations } from './chatgpt.js';
import { claudeConversations } from './claude.js';
import { exportFileOf } from './tree.js';

/** The export file of a ChatGPT or Claude data export given as its JSON text (BAD_USER_INPUT when it is not one). */
export function foreignExportLines(from: 'chatgpt' | 'claude', text: string): string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw badInput(`the body is not JSON: send the ${from === 'chatgpt' ? 'ChatGPT' : 'Claude'} export's conversations.json.`);
  }
  const conversations = from === 'chatgpt' ? chatgptConversations(data) : claudeConversations(data);
  if (conversations.length === 0) throw badInput('the export holds no conversation.');
  return exportFileOf(conversations);
}
