import type { Hub, HubMessage } from 'portico';
import type { Message } from './messages.js';

/** Whether a held event is about the message `id` (created or updated). */
function isAbout(event: HubMessage, id: string): boolean {
  return (event.data as { id?: unknown } | null)?.id === id;
}

/**
 * A message changed: its older versions in the replay history of `channels` are rewritten in
 * place (their offsets kept, so resume positions stay valid), then the change is published.
 * Deleted: each becomes `message.deleted` carrying the id alone, so no replay returns the
 * text. Updated: each carries the new message, and `message.updated` follows.
 */
export async function publishChange(
  hub: Hub,
  channels: readonly string[],
  change:
    | { event: 'message.updated'; message: Message }
    | { event: 'message.deleted'; message: Message },
): Promise<void> {
  const { id } = change.message;
  const data = change.event === 'message.deleted' ? { id } : change.message;
  for (const channel of new Set(channels)) {
    await hub.redact(channel, (event) =>
      isAbout(event, id)
        ? { event: change.event === 'message.deleted' ? 'message.deleted' : event.event, data }
        : undefined,
    );
  }
  await hub.publish(channels[0]!, change.event, data);
}
