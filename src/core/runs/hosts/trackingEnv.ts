// The user's MLflow tracking server (setting remoteFinetune.mlflow.trackingUri) as the run's MLFLOW_TRACKING_URI,
// unless the run's .env names one: without either, the host keeps a file store beside its runs (tracking.py).

export function withTrackingSettings(env: Readonly<Record<string, string>>, mlflowTrackingUri: string): Record<string, string> {
  const uri = mlflowTrackingUri.trim();
  if (!uri || env.MLFLOW_TRACKING_URI) return { ...env };
  return { ...env, MLFLOW_TRACKING_URI: uri };
}
