import { completeDataFileMultipartUpload, convertDataFileToApi, createDataFileUploadUrl } from '../../shared/agent-api/actions/datasets.js';
import type { TouchedApp } from '../agent/handler.js';
import { handlerFor, type AnyAgentHandler } from '../agent/typed-handler.js';
import { getWalletApp, type SiteRow } from '../sites/sites.js';
import { convertDataFile, planConversion, type ConvertPlan } from './datasets.js';
import { assertUploadToken, checkCompletion, completeUpload, createUpload, planUpload, type UploadRow } from './uploads.js';

const touched = (site: SiteRow): TouchedApp => ({ id: site.id, slug: site.slug, visibility: site.visibility });

/** x402.create_data_file_upload_url — the kind and size are checked before payment (400/413 cost nothing). */
export const createDataFileUploadUrlHandler = handlerFor<typeof createDataFileUploadUrl, SiteRow>(createDataFileUploadUrl, {
  async check({ deps, wallet, params, input }) {
    const site = await getWalletApp(deps.db, wallet, params.siteId);
    planUpload(deps, input);
    return site;
  },
  async run({ deps, tx, state: site, input }) {
    return { result: await createUpload(deps, site, input, tx), app: touched(site) };
  },
});

/** x402.complete_data_file_multipart_upload — slot, upload id and part numbering checked before payment. */
export const completeDataFileMultipartUploadHandler = handlerFor<typeof completeDataFileMultipartUpload, { site: SiteRow; upload: UploadRow }>(
  completeDataFileMultipartUpload,
  {
    async check({ deps, wallet, params, input }) {
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      assertUploadToken(deps, input.uploadToken, site.id, input.key);
      const upload = await checkCompletion(deps, site.id, input);
      return { site, upload };
    },
    async run({ deps, tx, state, input }) {
      const { size } = await completeUpload(deps, state.upload, input.parts, tx);
      return { result: { success: true, key: state.upload.key, size }, app: touched(state.site) };
    },
  },
);

/**
 * x402.convert_data_file_to_api — ownership, the upload slot, the file's presence, size and kind
 * (first bytes) and the slug are checked before payment. The conversion runs in the paid call's
 * transaction: a file that fails to parse throws `data_file_invalid` (400), the transaction rolls
 * back before settlement, nothing is loaded and nothing is charged.
 */
export const convertDataFileToApiHandler = handlerFor<typeof convertDataFileToApi, { site: SiteRow; plan: ConvertPlan }>(convertDataFileToApi, {
  async check({ deps, wallet, params, input }) {
    const site = await getWalletApp(deps.db, wallet, params.siteId);
    assertUploadToken(deps, input.uploadToken, site.id, input.key);
    const plan = await planConversion(deps, site, input);
    return { site, plan };
  },
  async run({ deps, tx, state }) {
    const { view, cleanup } = await convertDataFile(deps, state.site, state.plan, tx);
    const { id, slug, name, format, tableId, url, pathUrl, recordCount, fields } = view;
    return {
      result: {
        asset: { id, slug, name, format, tableId, url, pathUrl, recordCount, fields },
        replaced: state.plan.replacing !== null,
        ...(state.plan.slugTaken ? { slugTaken: state.plan.slugTaken } : {}),
      },
      app: touched(state.site),
      afterCommit: cleanup,
    };
  },
});

/** Registered in service/agent-handlers.ts by action name. */
export const datasetAgentHandlers: Record<string, AnyAgentHandler> = {
  [createDataFileUploadUrl.name]: createDataFileUploadUrlHandler,
  [completeDataFileMultipartUpload.name]: completeDataFileMultipartUploadHandler,
  [convertDataFileToApi.name]: convertDataFileToApiHandler,
};
