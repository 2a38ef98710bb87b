import { randomUUID } from 'node:crypto';

/** `msg_…` / `ep_…`: 122 random bits (randomUUID draws from a buffered pool: cheap per id). */
export const newId = (prefix: string): string => `${prefix}_${randomUUID().replaceAll('-', '')}`;
