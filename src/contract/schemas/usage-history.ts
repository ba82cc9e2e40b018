// An instance's usage over its life, as its agent measured it (openrig's own extension, for the
// console's charts): one sample a minute for the last day, one an hour before that.
import { authErrors, idParams } from './common.js';

/** Seconds a minute sample spans, and an hourly one. */
export const MINUTE_SPAN_S = 60;
export const HOUR_SPAN_S = 3600;

export const usageSampleSchema = {
  type: 'object',
  required: ['t', 'span_s', 'gpu_util', 'gpu_mem_bytes', 'disk_usage_bytes'],
  properties: {
    t: { type: 'number', description: "unix seconds: the start of the sample's span" },
    span_s: {
      type: 'integer',
      enum: [MINUTE_SPAN_S, HOUR_SPAN_S],
      description: `${MINUTE_SPAN_S} (one measurement of the minute) or ${HOUR_SPAN_S} (the hour's minutes rolled up)`,
    },
    gpu_util: {
      type: ['number', 'null'],
      description:
        "mean utilisation of the instance's GPUs, percent (the hour's mean); null when not measured",
    },
    gpu_mem_bytes: {
      type: ['integer', 'null'],
      description:
        "GPU memory the instance holds, bytes (the hour's highest); null when its agent does not report it",
    },
    disk_usage_bytes: {
      type: ['integer', 'null'],
      description: "bytes on the instance's disk (the hour's highest); null when not measured",
    },
  },
} as const;

export const usageHistory = {
  method: 'GET',
  url: '/api/v0/instances/:id/usage-history',
  schema: {
    tags: ['instances'],
    summary:
      "One of your instances' GPU utilisation, GPU memory and disk use over its life, oldest first (openrig's own)",
    params: idParams,
    response: {
      200: {
        type: 'object',
        required: ['success', 'instance_id', 'samples'],
        properties: {
          success: { type: 'boolean' },
          instance_id: { type: 'integer' },
          samples: { type: 'array', items: usageSampleSchema },
        },
      },
      ...authErrors,
    },
  },
} as const;
