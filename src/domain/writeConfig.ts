/** Write-side settings, from Config (src/config.ts) or test defaults. */
export interface WriteConfig {
  /** When non-empty, producers may only record these event types. Default: any. */
  allowedEventTypes: readonly string[];
  /** A requeue by filter matching more rows than this becomes a throttled redrive. Default 1000. */
  redriveThreshold: number;
  /** Default redrive rate, events per second. Default 100. */
  redriveRatePerSecond: number;
}

export const DEFAULT_WRITE_CONFIG: WriteConfig = Object.freeze({
  allowedEventTypes: [],
  redriveThreshold: 1000,
  redriveRatePerSecond: 100,
});
