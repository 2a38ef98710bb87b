/** How long each block of the `overload` servers lasts, and how often one comes, in milliseconds. */
export const BLOCK_MS = 100;
export const PERIOD_MS = 500;
