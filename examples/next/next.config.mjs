// portico runs as the Node package it is, not bundled into the route handlers; Next's own
// X-Powered-By is off (portico's securityHeaders() cannot remove what Next adds after it)
/** @type {import('next').NextConfig} */
export default { serverExternalPackages: ['portico'], poweredByHeader: false };
