import { PACKAGE_VERSION } from '../../core/package-root.js';

export const USER_AGENT = `everme-minimaxcode/${PACKAGE_VERSION} node/${process.versions.node}`;
