// What the requeue sweep's function instance published recently (PublishHolds: a (proxy, due time) is
// not published again while its pass is still on the way), and where its latest sweep's drift range ends.
import { PublishHolds } from '../../../shared/src/domain/publish-holds.js';

export class PublishMemory extends PublishHolds {
  /**
   * Where the drift range of this instance's latest sweep ends (ms since the epoch); when that sweep
   * failed, where its range began, since none of it is known to be published.
   */
  drift: { through: number; failed: boolean } | null = null;
}
