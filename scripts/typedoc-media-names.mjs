// A TypeDoc plugin: the repository files the guides link to (the examples, SECURITY.md) are
// copied into the site's media/ under their path from the repository root
// (examples-express-server.ts), instead of TypeDoc's server.ts, server-1.ts, server-2.ts…
import { relative, sep } from 'node:path';
import { ValidatingFileRegistry } from 'typedoc';

/** @param {import('typedoc').Application} app */
export function load(app) {
  ValidatingFileRegistry.prototype.getName = function getName(id) {
    const absolute = this.mediaToPath.get(id);
    if (absolute === undefined) return undefined;
    if (!this.names.has(id)) {
      const root = app.options.getValue('basePath') || process.cwd();
      const name = relative(root, absolute).split(sep).join('-');
      this.names.set(id, name);
      this.nameUsage.set(name, 1);
    }
    return this.names.get(id);
  };
}
