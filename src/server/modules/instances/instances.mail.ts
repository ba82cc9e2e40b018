// The instances module's e-mails (pure): what a renter of an interruptible instance is told when it
// is preempted and when it resumes. Times in UTC. Only the service's own words and numbers appear
// (no text a host or another renter supplied).
import { escapeHtml, utc, type Rendered } from '../notifications/notifications.format.js';
import type { Tier } from './instances.market-rules.js';

function page(title: string, paragraphs: string[]): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body style="font-family:sans-serif">${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('')}</body></html>`;
}

function greeting(name: string): string {
  return name ? `Hello ${name},` : 'Hello,';
}

const TIER_WORDS: Record<Tier, string> = {
  owner: "the machine's owner, whose own rentals come first",
  'on-demand': 'an on-demand rental, which comes before every bid',
  bid: 'a higher bid',
};

export function preemptedEmail(p: {
  name: string;
  instanceId: number;
  machineId: number;
  bid: number;
  by: Tier;
  at: number;
  graceS: number;
}): Rendered {
  const subject = `Instance ${p.instanceId} was preempted: outbid by ${p.by === 'bid' ? 'a higher bid' : p.by === 'owner' ? 'the owner' : 'an on-demand rental'}`;
  const lines = [
    greeting(p.name),
    `Your interruptible instance ${p.instanceId} on machine ${p.machineId} (bid ${p.bid} $/hour) was preempted at ${utc(p.at)} by ${TIER_WORDS[p.by]}.`,
    `It received SIGTERM and is stopped within ${p.graceS} seconds. Its disk is kept; its GPU charges stopped at the preemption, its disk charges continue.`,
    'It resumes by itself when its bid wins the machine again. To win it sooner, raise the bid (change bid); to stop waiting, stop or destroy the instance.',
  ];
  return { subject, text: `${lines.join('\n\n')}\n`, html: page(subject, lines) };
}

export function resumedEmail(p: {
  name: string;
  instanceId: number;
  machineId: number;
  bid: number;
  at: number;
}): Rendered {
  const subject = `Instance ${p.instanceId} resumed: its bid wins the machine again`;
  const lines = [
    greeting(p.name),
    `Your interruptible instance ${p.instanceId} on machine ${p.machineId} resumed at ${utc(p.at)}: its bid of ${p.bid} $/hour wins the machine again. It starts with its disk as it was, and is charged its bid while it runs.`,
  ];
  return { subject, text: `${lines.join('\n\n')}\n`, html: page(subject, lines) };
}
