import { Type, type Static, type TUnsafe } from '@sinclair/typebox';
import { MATCHED_IDENTIFIER_PATTERN } from '../../core/identifiers.ts';
import { Choice } from '../../schemas/choice.ts';
import { DateString } from '../../schemas/dates.ts';
import { NullableText, RequiredText, Text } from '../../schemas/text.ts';

// Supply points (spec 2.3): a union on `supply_type`. Each kind takes the common fields and its own
// (a field of another kind is `unknown_field`). The enum sets go beyond the values the spec shows;
// docs/validation.md lists them.

export const SUPPLY_TYPES = ['ELECTRICITY', 'HEAT_PUMP', 'LIGHT', 'POLE', 'WATER_HEATER'] as const;
export const ENERGIZATION_STATUSES = ['ENERGIZED', 'DE_ENERGIZED'] as const;
export const METER_STATUSES = ['ACTIVE', 'INACTIVE', 'REMOVED'] as const;
export const METER_PHASES = ['SINGLE', 'THREE'] as const;
export const COVER_MATERIALS = ['GLASS', 'PLASTIC', 'METAL'] as const;
export const METER_BASES = ['SOCKET', 'BOTTOM_CONNECTED', 'DIN_RAIL'] as const;
export const REGISTER_TYPES = [
  'KWH_IMPORT', 'KWH_EXPORT', 'KW_IMPORT', 'KW_EXPORT', 'KVARH_IMPORT', 'KVARH_EXPORT', 'KVA_IMPORT', 'KVA_EXPORT',
] as const;

/** PostgreSQL `integer` (meter numbers, call numbers and the like are stored as int4). */
const INT4_MAX = 2_147_483_647;
const Count = (maximum: number, minimum = 0) => Type.Integer({ minimum, maximum, format: 'int32' });
const Quantity = (maximum: number) => Type.Number({ minimum: 0, maximum });

export const Agreement = Type.Object({
  tariff_code: RequiredText(100),
  effective_from: DateString,
}, { $id: 'Agreement', additionalProperties: false });
export type Agreement = Static<typeof Agreement>;

export const Register = Type.Object({
  register_type: Choice(REGISTER_TYPES),
  whole_digits: Type.Optional(Count(20, 1)),
  decimal_digits: Type.Optional(Count(10)),
  active_from: Type.Optional(DateString),
  multiplier: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, 'x-decimal-places': 6 })),
}, { $id: 'Register', additionalProperties: false });
export type Register = Static<typeof Register>;

export const MeterType = Type.Object({
  manufacturer: Type.Optional(Text(200)),
  model: Type.Optional(Text(200)),
  stock_code: Type.Optional(Text(100)),
  amps_low: Type.Optional(Quantity(100_000)),
  amps_high: Type.Optional(Quantity(100_000)),
  volts_low: Type.Optional(Quantity(1_000_000)),
  volts_high: Type.Optional(Quantity(1_000_000)),
  elements: Type.Optional(Quantity(1_000)),
  phase: Type.Optional(Choice(METER_PHASES)),
  is_bidirectional: Type.Optional(Type.Boolean()),
  is_analog: Type.Optional(Type.Boolean()),
  network_connectivity: Type.Optional(Type.Boolean()),
  cover_material: Type.Optional(Choice(COVER_MATERIALS)),
  wire_ports: Type.Optional(Count(1_000)),
  base: Type.Optional(Choice(METER_BASES)),
}, { $id: 'MeterType', additionalProperties: false });
export type MeterType = Static<typeof MeterType>;

export const Meter = Type.Object({
  serial_number: RequiredText(100),
  subgroup: Type.Optional(Count(INT4_MAX)),
  seal_date: Type.Optional(DateString),
  meter_number: Type.Optional(Count(INT4_MAX)),
  status: Type.Optional(Choice(METER_STATUSES)),
  active_from: Type.Optional(DateString),
  meter_type: Type.Optional(MeterType),
  registers: Type.Array(Register, { maxItems: 20 }),
}, { $id: 'Meter', additionalProperties: false });
export type Meter = Static<typeof Meter>;

/** A reading value: a non-negative decimal number written as a string, at most 6 decimals. */
export const READING_VALUE_PATTERN = '^\\d{1,12}(\\.\\d{1,6})?$';

export const TransferReading = Type.Object({
  register_type: Choice(REGISTER_TYPES),
  read_date: DateString,
  value: Type.String({
    maxLength: 19, pattern: READING_VALUE_PATTERN,
    description: 'The reading as a string holding a non-negative decimal number, for example "12345.6" (at most 12 digits and 6 decimals).',
  }),
}, { $id: 'TransferReading', additionalProperties: false });
export type TransferReading = Static<typeof TransferReading>;

const common = {
  supply_start_date: DateString,
  last_billed_to_date: Type.Optional(DateString),
  agreements: Type.Optional(Type.Array(Agreement, { maxItems: 100 })),
};

export const ElectricitySupplyPoint = Type.Object({
  supply_type: Type.Literal('ELECTRICITY'),
  ...common,
  identifier: RequiredText(100, {
    pattern: MATCHED_IDENTIFIER_PATTERN,
    description: 'The electricity supply point identifier, matched as written: no surrounding white space, no control or format characters; '
      + 'unique within the payload, and not live on another account.',
  }),
  initial_connection_date: Type.Optional(DateString),
  location_description: Type.Optional(Text(500)),
  book_number: Type.Optional(Text(50)),
  call_number: Type.Optional(Count(INT4_MAX)),
  energization_status: Type.Optional(Choice(ENERGIZATION_STATUSES)),
  meters: Type.Optional(Type.Array(Meter, { maxItems: 20 })),
  transfer_readings: Type.Optional(Type.Array(TransferReading, { maxItems: 200 })),
}, { $id: 'ElectricitySupplyPoint', additionalProperties: false });
export type ElectricitySupplyPoint = Static<typeof ElectricitySupplyPoint>;

export const HeatPumpSupplyPoint = Type.Object({
  supply_type: Type.Literal('HEAT_PUMP'),
  ...common,
  serial_number_internal: Type.Optional(Text(100)),
  serial_number_external: Type.Optional(Text(100)),
  make_model: Type.Optional(Text(200)),
  size: Type.Optional(Count(1_000_000)),
  location_description: Type.Optional(Text(500)),
  product_note: Type.Optional(Text(1_000)),
}, { $id: 'HeatPumpSupplyPoint', additionalProperties: false });
export type HeatPumpSupplyPoint = Static<typeof HeatPumpSupplyPoint>;

// LIGHT and POLE share one shape; each is its own branch so the discriminator maps a const to it.
const lightLike = <K extends 'LIGHT' | 'POLE'>(kind: K) => Type.Object({
  supply_type: Type.Literal(kind),
  ...common,
  serial_number: Type.Optional(Text(100)),
  secondary_serial_number: Type.Optional(NullableText(100)),
  manufacturer_name: Type.Optional(Text(200)),
  model_name: Type.Optional(Text(200)),
  location: Type.Optional(Text(500)),
  product_note: Type.Optional(Text(1_000)),
  installed_at: Type.Optional(DateString),
}, { $id: `${kind === 'LIGHT' ? 'Light' : 'Pole'}SupplyPoint`, additionalProperties: false });

export const LightSupplyPoint = lightLike('LIGHT');
export type LightSupplyPoint = Static<typeof LightSupplyPoint>;
export const PoleSupplyPoint = lightLike('POLE');
export type PoleSupplyPoint = Static<typeof PoleSupplyPoint>;

export const WaterHeaterSupplyPoint = Type.Object({
  supply_type: Type.Literal('WATER_HEATER'),
  ...common,
  serial_number: Type.Optional(Text(100)),
  tank_size: Type.Optional(Text(50, { description: 'Free text, for example BIG.' })),
  tank_type: Type.Optional(Text(50, { description: 'Free text, for example GREEN.' })),
  tank_configuration: Type.Optional(Text(100)),
}, { $id: 'WaterHeaterSupplyPoint', additionalProperties: false });
export type WaterHeaterSupplyPoint = Static<typeof WaterHeaterSupplyPoint>;

export type SupplyPoint =
  | ElectricitySupplyPoint | HeatPumpSupplyPoint | LightSupplyPoint | PoleSupplyPoint | WaterHeaterSupplyPoint;

/**
 * oneOf + discriminator, so Ajv validates only the branch named by `supply_type`: an unknown kind is
 * `invalid_choice` at supply_type, and each error comes from that kind's own shape.
 */
export const SupplyPoint: TUnsafe<SupplyPoint> = Type.Unsafe<SupplyPoint>({
  $id: 'SupplyPoint',
  type: 'object',
  oneOf: [ElectricitySupplyPoint, HeatPumpSupplyPoint, LightSupplyPoint, PoleSupplyPoint, WaterHeaterSupplyPoint],
  discriminator: { propertyName: 'supply_type' },
  description: `A supply point; supply_type is one of ${SUPPLY_TYPES.join(', ')} and decides which fields it takes.`,
});
