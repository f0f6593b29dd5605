using { sales } from '../db/schema';

/**
 * Version 2 of the provider's API, served in the CDS profile `api-v2` (`npm start` and the console's
 * browser test use it): products got an EAN. The consumer imported version 1
 * (demo/consumer/srv/external/SalesService.cds is `cds import` of the provider without this profile),
 * so its `products` pipeline reports `ean` as schema drift: a new column, not mapped (informational).
 */
extend sales.Products with {
  ean : String(13);
}
