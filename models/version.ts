/**
 * The model-layer version (decision record field jev_version). Bump it when a question's event definition, features,
 * fitting or calibration method changes, so records made under different model code are never pooled silently.
 */
export const JEV_VERSION = 'jev-2.0.0'
