// portico runs as the Node package it is, not bundled into the route handlers
/** @type {import('next').NextConfig} */
export default { serverExternalPackages: ['portico'] };
