/**
 * @sluice/hybrid is being built; see the repository README for what ships today.
 * The package exists now so the workspace, build and exports checks cover it from the start.
 */
export const PACKAGE_NAME = '@sluice/hybrid';
