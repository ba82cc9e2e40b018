// The charting library, loaded on demand: this module (uPlot and its stylesheet) goes into a chunk
// of its own, fetched the first time a chart is shown, so the console's first load does not carry it.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export { uPlot };
