// A batch of financial transactions of every type (spec 2.5), as a client would send them.
// `marker` goes into each transaction_id so one template serves many unique batches.
const TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const;

export function transactionItem(i: number, marker: string): Record<string, unknown> {
  const type = TYPES[i % TYPES.length]!;
  const day = String(1 + (i % 28)).padStart(2, '0');
  const month = String(1 + (i % 12)).padStart(2, '0');
  const base = {
    transaction_id: `TX-${marker}-${i}`,
    transaction_date: `2024-${month}-${day}`,
    amount: Math.round((5 + ((i * 37) % 9000) / 7) * 100) / 100,
    type,
  };
  switch (type) {
    case 'CHARGE':
      return { ...base, reason: 'IMPORTED_CHARGE', display_note: 'Imported charge from the previous supplier', note: `Charge line ${i}` };
    case 'CREDIT':
      return { ...base, reason: 'GENERAL_CREDIT', display_note: 'Goodwill credit', note: `Credit line ${i}` };
    case 'PAYMENT':
      return { ...base, reason: 'ACCOUNT_CHARGE_PAYMENT', reference: `PAY-${i}`, payment_type: 'DD_REGULAR_COLLECTION', display_note: 'Direct debit' };
    case 'REPAYMENT':
      return { ...base, reason: 'FULL_CREDIT_REFUND', reference: `REF-${i}`, payment_type: 'DIRECT_CREDIT', display_note: 'Refund' };
    case 'SUPPLY_CHARGE':
      return {
        ...base,
        product_code: 'STANDARD-ELEC-2024',
        display_note: 'Electricity supply',
        line_items: [{
          rate_band: 'CONSUMPTION_STANDARD', start_date: `2024-${month}-01`, end_date: `2024-${month}-${day}`,
          number_of_units: 123.5, net_amount: 30.25, price_per_unit: 0.245, units: [60.5, 63],
        }],
        tax_items: [{ amount: 1.51, tax_type: 'VAT', value_taxed: 30.25, rate: 0.05, unit_type: 'PROPORTION' }],
      };
  }
}

export function transactionsBody(supplier: string, external: string, count: number, marker: string): Record<string, unknown> {
  return { import_supplier: supplier, external_account_number: external, transactions: Array.from({ length: count }, (_, i) => transactionItem(i, marker)) };
}
