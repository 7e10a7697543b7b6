import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withTrackingSettings } from '../../../src/core/runs/hosts/trackingEnv';

test('the MLflow tracking server from the user settings goes to the run, unless the .env names one', () => {
  assert.deepEqual(withTrackingSettings({ HF_TOKEN: 'x' }, 'http://mlflow.internal:5000'), {
    HF_TOKEN: 'x',
    MLFLOW_TRACKING_URI: 'http://mlflow.internal:5000',
  });
  assert.deepEqual(withTrackingSettings({ MLFLOW_TRACKING_URI: 'file:///data/mlruns' }, 'http://mlflow.internal:5000'), {
    MLFLOW_TRACKING_URI: 'file:///data/mlruns',
  });
  assert.deepEqual(withTrackingSettings({}, '  '), {}, 'no setting: the host file store');
});
